"""Clients: the shared client instance, the RPC API, producers and consumers."""
