"""Files on disk: atomic writes, compression, the content-addressed blob store, manifests and the fast
replay index. Knows nothing of HTTP, providers or config."""
