"""Every check made before any work: settings and their names, input files, backends and keys (offline and online), the
store's writability."""
