"""A small scheduler extender (the extender/v1 HTTP protocol), to run beside kubesched or kube-scheduler.

    python examples/extender/extender.py --port 8888

filter:     nodes labelled ``example.com/maintenance=true`` are refused ("node is under maintenance");
            a pod labelled ``example.com/needs=gpu-a100`` is refused, unresolvably, on nodes without
            ``example.com/gpu=a100``.
prioritize: 10 for nodes labelled ``example.com/tier=fast``, else 0.
bind:       not offered (DefaultBinder binds).

It is ``nodeCacheCapable``: it answers from node names and keeps its own copy of the labels, read
from ``--nodes FILE`` (the manifests the cluster was made from), as a real extender would keep
an informer. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

LABELS: dict[str, dict[str, str]] = {}


def load_nodes(path: str) -> None:
    files = sorted(Path(path).glob("*.yaml")) if Path(path).is_dir() else [Path(path)]
    for f in files:
        for doc in yaml.safe_load_all(f.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "Node":
                meta = doc.get("metadata") or {}
                LABELS[meta["name"]] = dict(meta.get("labels") or {})


def names_of(args: dict[str, Any]) -> list[str]:
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items") or []]


def filter_nodes(args: dict[str, Any]) -> dict[str, Any]:
    pod_labels = ((args.get("Pod") or {}).get("metadata") or {}).get("labels") or {}
    passed, failed, unresolvable = [], {}, {}
    for name in names_of(args):
        labels = LABELS.get(name, {})
        if labels.get("example.com/maintenance") == "true":
            failed[name] = "node is under maintenance"
        elif pod_labels.get("example.com/needs") == "gpu-a100" and labels.get("example.com/gpu") != "a100":
            unresolvable[name] = "node has no A100"
        else:
            passed.append(name)
    return {"NodeNames": passed, "FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable, "Error": ""}


def prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"Host": n, "Score": 10 if LABELS.get(n, {}).get("example.com/tier") == "fast" else 0} for n in names_of(args)
    ]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the scheduler reuses its connection
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    def do_POST(self) -> None:
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        try:
            args = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            body = {"filter": filter_nodes, "prioritize": prioritize}[verb](args)
            code = 200
        except KeyError:
            code, body = 404, {"Error": f"unknown verb {verb}"}
        except (ValueError, TypeError) as exc:
            code, body = 400, {"Error": str(exc)}
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--nodes", default=str(Path(__file__).parent / "cluster.yaml"), help="node manifests")
    args = parser.parse_args()
    load_nodes(args.nodes)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"extender listening on http://{args.host}:{server.server_address[1]}/scheduler", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
