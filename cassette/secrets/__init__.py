"""What is a secret, decided once: the registry of secret names and formats, the rule engine, scanning
and streaming redaction."""
