"""Built-in provider plugins: each owns one provider's request and response shapes and answers the
provider hooks in `cassette.hookspecs`."""
