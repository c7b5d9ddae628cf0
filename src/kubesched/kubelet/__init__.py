"""The hollow kubelet: the node agent of the embedded cluster, as KWOK's (``agent``), and the hollow
nodes it runs (``node``). It talks to the store as a kubelet talks to the API server; nothing in the
API server depends on it."""
