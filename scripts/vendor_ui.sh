#!/usr/bin/env bash
# The web UI's front-end libraries, vendored as the ES modules their npm packages ship: Preact
# (with its hooks) and htm. No build step: index.html maps the bare names to these files.
# Re-run to reproduce them; npm checks each tarball against the registry's integrity hash.
set -euo pipefail
cd "$(dirname "$0")/.."
out=src/kubesched/ui/static/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent preact@10.29.8 htm@3.1.1 >/dev/null)
tar -xzf "$work/preact-10.29.8.tgz" -C "$work" && mv "$work/package" "$work/preact"
tar -xzf "$work/htm-3.1.1.tgz" -C "$work" && mv "$work/package" "$work/htm"
mkdir -p "$out"
cp "$work/preact/dist/preact.module.js" "$out/preact.module.js"
cp "$work/preact/hooks/dist/hooks.module.js" "$out/hooks.module.js"
cp "$work/htm/dist/htm.module.js" "$out/htm.module.js"
cp "$work/preact/LICENSE" "$out/LICENSE.preact"
cp "$work/htm/LICENSE" "$out/LICENSE.htm"
# the source-map comments point at files not shipped
sed -i '/^\/\/# sourceMappingURL=/d' "$out"/*.module.js
sha256sum "$out"/*.js
