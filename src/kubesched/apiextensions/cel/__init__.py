"""CEL as apiextensions-apiserver runs it for a CRD's ``x-kubernetes-validations``: the rule's
syntax (``syntax``), the schema's declared types and sizes (``decls``), cel-go's cost model
(``cost``), the limits a CRD and a request are held to (``limits``, ``budget``) and the
evaluation (``runtime``)."""
