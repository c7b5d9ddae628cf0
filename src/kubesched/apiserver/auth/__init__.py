"""Authentication and authorisation (``k8s.io/apiserver/pkg/authentication`` and
``authorization``, ``plugin/pkg/auth/authorizer/rbac``): bearer tokens, impersonation, what a
request asks (``requestinfo``), RBAC with its bootstrap policy and escalation checks."""
