"""The REST handlers (``k8s.io/apiserver/pkg/endpoints/handlers``): create, update, patch and
delete, list and watch, subresources, discovery and OpenAPI, tables, request bodies and their
encodings, field management."""
