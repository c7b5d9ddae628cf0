"""The server's request filters (``k8s.io/apiserver/pkg/server/filters``): max in-flight, API
Priority and Fairness, fault injection for tests, and memory given back after a burst."""
