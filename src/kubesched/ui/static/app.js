// The web UI of `kubesched up`: Preact components written with htm (no build step). Live data
// comes from one server-sent event stream (/api/stream); a pod's page reads its scheduling
// results, which the scheduler writes on the pod in kube-scheduler-simulator's annotations.
import { h, render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import htm from "htm";

const html = htm.bind(h);
const WRITE = { "X-Kubesched-UI": "1" };

// -- formatting -------------------------------------------------------------------------------
function amount(resource, value) {
  if (value === undefined || value === null) return "0";
  if (resource === "cpu") return value % 1000 === 0 ? `${value / 1000}` : `${(value / 1000).toFixed(2)}`;
  if (resource === "memory" || resource === "ephemeral-storage") {
    const gi = value / 2 ** 30;
    return gi >= 1 ? `${+gi.toFixed(1)}Gi` : `${Math.round(value / 2 ** 20)}Mi`;
  }
  return `${value}`;
}

function shownResources(node) {
  const keys = Object.keys(node.allocatable).filter((k) => !k.startsWith("hugepages-"));
  const first = ["cpu", "memory", "pods"];
  return [...first.filter((k) => keys.includes(k)), ...keys.filter((k) => !first.includes(k)).sort()];
}

// -- live state -------------------------------------------------------------------------------
function useCluster() {
  const [state, setState] = useState({ nodes: [], pods: [], queue: null, scheduler: {}, live: false });
  useEffect(() => {
    const es = new EventSource("/api/stream");
    const key = (o) => `${o.namespace}/${o.name}`;
    es.addEventListener("snapshot", (e) => setState({ ...JSON.parse(e.data), live: true }));
    es.addEventListener("node", (e) => {
      const n = JSON.parse(e.data);
      setState((s) => {
        const rest = s.nodes.filter((x) => x.name !== n.name);
        return { ...s, nodes: n.deleted ? rest : [...rest, n].sort((a, b) => a.name.localeCompare(b.name)) };
      });
    });
    es.addEventListener("pod", (e) => {
      const p = JSON.parse(e.data);
      setState((s) => {
        const rest = s.pods.filter((x) => key(x) !== key(p));
        return { ...s, pods: p.deleted ? rest : [...rest, p].sort((a, b) => key(a).localeCompare(key(b))) };
      });
    });
    es.addEventListener("queue", (e) => setState((s) => ({ ...s, queue: JSON.parse(e.data) })));
    es.onerror = () => setState((s) => ({ ...s, live: false }));
    es.onopen = () => setState((s) => ({ ...s, live: true }));
    return () => es.close();
  }, []);
  return state;
}

function useHash() {
  const [hash, setHash] = useState(location.hash || "#/");
  useEffect(() => {
    const on = () => setHash(location.hash || "#/");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

// -- the cluster: nodes, pending pods, the queue ---------------------------------------------
function NodeCard({ node, pods }) {
  const running = pods.filter((p) => p.node === node.name && !p.terminated);
  const used = {};
  for (const p of running) for (const [r, v] of Object.entries(p.requests)) used[r] = (used[r] || 0) + v;
  used.pods = running.length;
  const state = [node.ready !== "True" ? "NotReady" : "", node.unschedulable ? "Cordoned" : ""].filter(Boolean);
  return html`<div class="card node" data-node=${node.name}>
    <h3><span>${node.name}</span><span class="tag">${state.join(", ") || node.labels["topology.kubernetes.io/zone"] || ""}</span></h3>
    ${shownResources(node).map((r) => {
      const cap = node.allocatable[r] || 0;
      const pct = cap ? Math.min(100, (100 * (used[r] || 0)) / cap) : 0;
      return html`<div class="bar" data-resource=${r}>
        <div class="label"><span>${r}</span><span>${amount(r, used[r] || 0)} / ${amount(r, cap)}</span></div>
        <div class="track"><div class=${"fill" + (pct >= 100 ? " full" : "")} style=${`width:${pct}%`}></div></div>
      </div>`;
    })}
    <div class="pods">
      ${pods
        .filter((p) => p.node === node.name)
        .map((p) => html`<a class=${"chip" + (p.terminated ? " done" : "")} data-pod=${`${p.namespace}/${p.name}`}
            href=${`#/pod/${p.namespace}/${p.name}`} title=${p.phase}>${p.name}</a>`)}
    </div>
  </div>`;
}

function QueueView({ queue }) {
  if (!queue) return html`<p class="muted">waiting for the scheduler…</p>`;
  const parts = [
    ["activeQ", "activeQ"],
    ["backoffQ", "backoffQ"],
    ["unschedulablePods", "unschedulablePods"],
    ["gated", "gated (PreEnqueue)"],
  ];
  return html`<table class="queue">
    <tr><th>sub-queue</th><th>pod</th><th>attempts</th><th>why</th></tr>
    ${parts.flatMap(([k, label]) =>
      (queue[k] || []).length === 0
        ? [html`<tr data-queue=${k}><td>${label}</td><td class="muted" colspan="3">empty</td></tr>`]
        : queue[k].map(
            (e, i) => html`<tr data-queue=${k} data-pod=${`${e.namespace}/${e.name}`}>
              <td>${i === 0 ? label : ""}</td>
              <td><a href=${`#/pod/${e.namespace}/${e.name}`}>${e.namespace}/${e.name}</a></td>
              <td class="num">${e.attempts}</td>
              <td>${e.gatingPlugin || e.unschedulablePlugins.join(", ")}${
                e.backoffSeconds !== undefined ? ` (backoff ${e.backoffSeconds}s)` : ""
              }</td>
            </tr>`
          )
    )}
  </table>`;
}

function ClusterView({ cluster }) {
  const pending = cluster.pods.filter((p) => !p.node && !p.terminated);
  return html`<div class="layout">
    <div>
      <h2>Nodes (${cluster.nodes.length})</h2>
      <div class="nodes">${cluster.nodes.map((n) => html`<${NodeCard} node=${n} pods=${cluster.pods} />`)}</div>
    </div>
    <div class="side">
      <section>
        <h2>Pending pods (${pending.length})</h2>
        <table class="pending">
          <tr><th>pod</th><th>reason</th></tr>
          ${pending.map(
            (p) => html`<tr data-pod=${`${p.namespace}/${p.name}`}>
              <td><a href=${`#/pod/${p.namespace}/${p.name}`}>${p.namespace}/${p.name}</a></td>
              <td>${p.gated ? "SchedulingGated" : p.message || p.reason || "waiting"}</td>
            </tr>`
          )}
        </table>
      </section>
      <section>
        <h2>Scheduling queue</h2>
        <${QueueView} queue=${cluster.queue} />
      </section>
    </div>
  </div>`;
}

// -- a pod's scheduling results ----------------------------------------------------------------
function total(final) {
  return Object.values(final || {}).reduce((a, v) => a + Number(v), 0);
}

function ResultsTable({ results, filterPlugins }) {
  const filter = results["filter-result"] || {};
  const raw = results["score-result"] || {};
  const final = results["finalscore-result"] || {};
  const selected = results["selected-node"] || "";
  const seen = new Set();
  for (const v of Object.values(filter)) Object.keys(v).forEach((p) => seen.add(p));
  const filters = [...filterPlugins.filter((p) => seen.has(p)), ...[...seen].filter((p) => !filterPlugins.includes(p))];
  const scorers = [...new Set(Object.values(final).flatMap((v) => Object.keys(v)))];
  const nodes = Object.keys(filter).sort(
    (a, b) => (b === selected) - (a === selected) || (b in final) - (a in final) || total(final[b]) - total(final[a]) || a.localeCompare(b)
  );
  return html`<table class="results">
    <thead>
      <tr><th></th><th colspan=${filters.length}>Filter</th>${
        scorers.length ? html`<th colspan=${scorers.length}>Score: raw → normalized × weight</th>` : ""
      }<th></th></tr>
      <tr><th>node</th>${filters.map((p) => html`<th>${p}</th>`)}${scorers.map((p) => html`<th>${p}</th>`)}<th>total</th></tr>
    </thead>
    <tbody>
      ${nodes.map(
        (n) => html`<tr class=${n === selected ? "win" : ""} data-node=${n}>
          <td>${n}${n === selected ? " ✔" : ""}</td>
          ${filters.map((p) => {
            const v = filter[n][p];
            return html`<td data-filter=${p} class=${v === undefined ? "muted" : v === "passed" ? "pass" : "fail"}>${
              v === undefined ? "–" : v
            }</td>`;
          })}
          ${scorers.map((p) =>
            final[n] && p in final[n]
              ? html`<td class="num" data-score=${p} data-raw=${raw[n]?.[p]} data-final=${final[n][p]}>${raw[n]?.[p]} → ${final[n][p]}</td>`
              : html`<td class="muted" data-score=${p}>–</td>`
          )}
          <td class="num" data-total>${n in final ? total(final[n]) : ""}</td>
        </tr>`
      )}
      ${(results["filter-result-groups"] || []).map(
        (g) => html`<tr class="group"><td>${g.nodes} more nodes (e.g. ${g.examples.join(", ")})</td>
          <td colspan=${filters.length + scorers.length + 1}>${g.plugin ? `${g.plugin}: ` : ""}${g.reason}</td></tr>`
      )}
    </tbody>
  </table>`;
}

function Points({ results, verdict }) {
  const rows = [
    ["PreFilter", "prefilter-result-status"],
    ["PreScore", "prescore-result"],
    ["Reserve", "reserve-result"],
    ["Permit", "permit-result"],
    ["PreBind", "prebind-result"],
    ["Bind", "bind-result"],
  ];
  const show = (v) => {
    const entries = Object.entries(v || {});
    const ran = entries
      .filter(([, x]) => x !== "")
      .map(([k, x]) => (typeof x === "object" ? `${k}: ${Object.entries(x).map(([p, m]) => `${p} ${m}`).join(", ") || "–"}` : `${k}: ${x}`));
    const skipped = entries.filter(([, x]) => x === "").map(([k]) => k);
    return [ran.join("; "), skipped.length ? `(skipped: ${skipped.join(", ")})` : ""].filter(Boolean).join(" ") || "–";
  };
  return html`<div class="points">
    ${(verdict || []).map(([label, text]) => html`<span class="muted">${label}</span><span data-verdict=${label}>${text}</span>`)}
    ${rows.map(([label, key]) => html`<span class="muted">${label}</span><span data-point=${key}>${show(results[key])}</span>`)}
  </div>`;
}

function PodView({ ns, name, cluster }) {
  const [data, setData] = useState(null);
  const [attempt, setAttempt] = useState(-1);
  const [error, setError] = useState("");
  const live = cluster.pods.find((p) => p.namespace === ns && p.name === name);
  const version = live ? JSON.stringify(live) : "";
  useEffect(() => {
    fetch(`/api/pods/${ns}/${name}`).then(async (r) => {
      if (!r.ok) return setError((await r.json()).message);
      setError("");
      setData(await r.json());
    });
  }, [ns, name, version]);
  if (error) return html`<div class="msg error">${error}</div>`;
  if (!data) return html`<p class="muted">loading…</p>`;
  const history = data.history || [];
  const results = attempt >= 0 && history[attempt] ? history[attempt] : data.latest;
  const verdict = attempt >= 0 && history[attempt] ? (data.historyVerdicts || [])[attempt] : data.verdict;
  const p = data.pod;
  return html`<div class="pod">
    <h2>Pod ${ns}/${name}</h2>
    <p>
      <span data-field="node">${p.node ? `on ${p.node}` : "pending"}</span>
      ${p.message ? html` — <span class="muted">${p.message}</span>` : ""}
      ${" "}<a href=${`#/edit/Pod/${ns}/${name}`}>edit YAML</a>
    </p>
    ${results
      ? html`
          <div class="row">
            <span>Attempt:</span>
            <select onChange=${(e) => setAttempt(Number(e.target.value))}>
              <option value="-1">latest</option>
              ${history.map((_, i) => html`<option value=${i}>${i + 1}</option>`)}
            </select>
            <span class="muted">selected node: <b data-field="selected">${results["selected-node"] || "none"}</b>;
              scores are raw → normalized × weight (${Object.entries(data.weights).map(([k, w]) => `${k} ×${w}`).join(", ")})</span>
          </div>
          <${Points} results=${results} verdict=${verdict} />
          <${ResultsTable} results=${results} filterPlugins=${data.filterPlugins} />`
      : html`<p class="muted">No scheduling results on this pod yet (bound by spec.nodeName, gated, or scheduled with results off).</p>`}
    <h2 style="margin-top:1em">Events</h2>
    <table>${data.events.map((e) => html`<tr><td>${e.type}</td><td>${e.reason}</td><td>${e.message}</td><td class="num">${e.count}</td></tr>`)}</table>
  </div>`;
}

// -- YAML editor and the configuration ---------------------------------------------------------
const NEW_POD = `apiVersion: v1
kind: Pod
metadata:
  name: my-pod
  namespace: default
spec:
  containers:
  - name: app
    image: registry.k8s.io/pause:3.10
    resources:
      requests:
        cpu: 500m
        memory: 256Mi
`;

function EditorView({ route }) {
  const [kinds, setKinds] = useState([]);
  const [kind, setKind] = useState(route[0] || "Pod");
  const [objects, setObjects] = useState([]);
  const [target, setTarget] = useState(route[1] ? `${route[1]}/${route[2]}` : "");
  const [text, setText] = useState(route[1] ? "" : NEW_POD);
  const [msg, setMsg] = useState(null);
  useEffect(() => { fetch("/api/kinds").then((r) => r.json()).then(setKinds); }, []);
  useEffect(() => { fetch(`/api/objects/${kind}`).then((r) => r.json()).then(setObjects); }, [kind, msg]);
  useEffect(() => {
    if (!target) return;
    const [ns, name] = target.split("/");
    fetch(`/api/yaml/${kind}/${ns || "-"}/${name}`).then(async (r) => {
      if (r.ok) setText(await r.text());
      else setMsg({ error: true, text: (await r.json()).message });
    });
  }, [kind, target]);
  const apply = async () => {
    const r = await fetch("/api/apply", { method: "POST", headers: { ...WRITE, "Content-Type": "application/yaml" }, body: text });
    const body = await r.json();
    setMsg(r.ok ? { text: `applied: ${body.applied.map((a) => `${a.kind} ${a.namespace ? a.namespace + "/" : ""}${a.name}`).join(", ")}` } : { error: true, text: body.message });
  };
  const remove = async () => {
    if (!target) return;
    const [ns, name] = target.split("/");
    const r = await fetch(`/api/objects/${kind}/${ns || "-"}/${name}`, { method: "DELETE", headers: WRITE });
    const body = await r.json();
    setMsg(r.ok ? { text: `deleted ${kind} ${target}` } : { error: true, text: body.message });
    if (r.ok) setTarget("");
  };
  return html`<div class="editor">
    <h2>Resources as YAML</h2>
    <div class="row">
      <select name="kind" value=${kind} onChange=${(e) => { setKind(e.target.value); setTarget(""); }}>
        ${kinds.map((k) => html`<option value=${k}>${k}</option>`)}
      </select>
      <select name="object" value=${target} onChange=${(e) => setTarget(e.target.value)}>
        <option value="">(new)</option>
        ${objects.map((o) => html`<option value=${`${o.namespace}/${o.name}`}>${o.namespace ? `${o.namespace}/` : ""}${o.name}</option>`)}
      </select>
      <button onClick=${() => { setTarget(""); setText(NEW_POD); }}>New pod</button>
      <button class="primary" name="apply" onClick=${apply}>Apply</button>
      <button name="delete" onClick=${remove} disabled=${!target}>Delete</button>
    </div>
    ${msg && html`<div class=${"msg " + (msg.error ? "error" : "ok")} data-message>${msg.text}</div>`}
    <textarea name="yaml" spellcheck="false" value=${text} onInput=${(e) => setText(e.target.value)}></textarea>
  </div>`;
}

function ConfigView() {
  const [text, setText] = useState("");
  const [info, setInfo] = useState({});
  const [msg, setMsg] = useState(null);
  const load = () => fetch("/api/config").then((r) => r.json()).then((c) => { setText(c.yaml); setInfo(c); });
  useEffect(() => { load(); }, []);
  const apply = async () => {
    const r = await fetch("/api/config", { method: "PUT", headers: { ...WRITE, "Content-Type": "application/yaml" }, body: text });
    const body = await r.json();
    setMsg(r.ok ? { text: `the scheduler restarted with this configuration (restart ${body.restarts})` } : { error: true, text: body.message });
    if (r.ok) load();
  };
  return html`<div class="config">
    <h2>Scheduler configuration</h2>
    <p class="muted">KubeSchedulerConfiguration in use (from ${info.source}), with every default filled in. Applying it restarts the scheduler with its profiles, as kube-scheduler-simulator does; pending pods are taken up again.</p>
    <div class="row"><button class="primary" name="apply-config" onClick=${apply}>Apply and restart the scheduler</button></div>
    ${msg && html`<div class=${"msg " + (msg.error ? "error" : "ok")} data-message>${msg.text}</div>`}
    <textarea name="config" spellcheck="false" value=${text} onInput=${(e) => setText(e.target.value)}></textarea>
  </div>`;
}

// -- the page ----------------------------------------------------------------------------------
function App() {
  const cluster = useCluster();
  const hash = useHash();
  const route = useMemo(() => hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent), [hash]);
  let view;
  if (route[0] === "pod") view = html`<${PodView} ns=${route[1]} name=${route[2]} cluster=${cluster} />`;
  else if (route[0] === "edit") view = html`<${EditorView} route=${route.slice(1)} key=${hash} />`;
  else if (route[0] === "config") view = html`<${ConfigView} />`;
  else view = html`<${ClusterView} cluster=${cluster} />`;
  const tab = (href, label, on) => html`<a href=${href} class=${on ? "on" : ""}>${label}</a>`;
  return html`<header>
      <h1>kubesched</h1>
      <nav>
        ${tab("#/", "Cluster", !route[0])}${tab("#/edit", "Resources", route[0] === "edit")}${tab("#/config", "Scheduler configuration", route[0] === "config")}
      </nav>
      <span class="live" data-live=${cluster.live}>${cluster.live ? "● live" : "○ reconnecting"} · ${cluster.nodes.length} nodes · ${cluster.pods.length} pods</span>
    </header>
    <main>${view}</main>`;
}

render(html`<${App} />`, document.getElementById("app"));
window.kubeschedUi = true;
