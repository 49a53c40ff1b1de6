"""The only package that imports dulwich: the index, staged blobs, revisions and snapshots of cassettes."""
