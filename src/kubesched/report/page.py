"""One self-contained HTML page: the run's parameters, then sections that are either a plotly
chart or a data table. plotly.js is embedded once, so the file opens without a network. Every
table can be filtered as one types and downloaded whole as CSV; its rows ride in the page as
JSON and are drawn by a few lines of plain JavaScript (no framework)."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from kubesched.errors import InputError

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; font-size: 0.9rem; } td, th { border: 1px solid #ccc; padding: 0.2rem 0.6rem; }
th { background: #f4f4f4; text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #555; font-size: 0.9rem; } .tools { margin: 0.4rem 0; display: flex; gap: 0.8rem; align-items: center; }
.tools input { padding: 0.2rem 0.4rem; min-width: 18rem; } .count { color: #555; font-size: 0.9rem; }
.scroll { max-height: 32rem; overflow: auto; }
"""

ROW_LIMIT = 500  # rows drawn at once; the filter and the CSV cover all of them

SCRIPT = """
(function () {
  const LIMIT = window.kubeschedRowLimit;
  const cell = v => { const s = v === null || v === undefined ? '' : String(v);
                      return /[",\\r\\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s; };
  const tables = document.querySelectorAll('section.data');
  for (const sec of tables) {
    const rows = JSON.parse(sec.querySelector('script.rows').textContent);
    const headers = Array.from(sec.querySelectorAll('thead th')).map(th => th.textContent);
    const body = sec.querySelector('tbody');
    const count = sec.querySelector('.count');
    const input = sec.querySelector('input');
    const text = rows.map(r => r.map(c => c === null ? '' : String(c)).join('\\u0000').toLowerCase());
    const show = () => {
      const terms = (input ? input.value : '').toLowerCase().split(/\\s+/).filter(Boolean);
      const match = [];
      for (let i = 0; i < rows.length; i++) if (terms.every(t => text[i].includes(t))) match.push(i);
      body.replaceChildren(...match.slice(0, LIMIT).map(i => {
        const tr = document.createElement('tr');
        for (const c of rows[i]) {
          const td = document.createElement('td');
          td.textContent = c === null ? '' : String(c);
          if (typeof c === 'number') td.className = 'num';
          tr.appendChild(td);
        }
        return tr;
      }));
      count.textContent = (match.length === rows.length ? rows.length + ' rows'
                           : match.length + ' of ' + rows.length + ' rows')
                          + (match.length > LIMIT ? ', the first ' + LIMIT + ' shown' : '');
    };
    if (input) input.addEventListener('input', show);
    sec.querySelector('button.csv').addEventListener('click', () => {
      const csv = [headers, ...rows].map(r => r.map(cell).join(',')).join('\\r\\n') + '\\r\\n';
      const a = document.createElement('a');
      a.href = URL.createObjectURL(new Blob([csv], {type: 'text/csv'}));
      a.download = sec.dataset.file;
      document.body.appendChild(a);
      a.click();
      a.remove();
    });
    show();
  }
  window.kubeschedTables = tables.length;
})();
"""


@dataclass(slots=True)
class Table:
    """A data table: ``columns`` are (row key, header); the header names the unit."""

    key: str  # the section's id and the CSV's file name
    title: str
    columns: Sequence[tuple[str, str]]
    rows: Sequence[dict[str, Any]]
    note: str = ""


Section = tuple[str, go.Figure] | Table


def page(title: str, params: dict[str, Any], sections: Sequence[Section], notes: Iterable[str] = ()) -> str:
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<table>",
        *(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_text(v))}</td></tr>" for k, v in params.items()),
        "</table>",
        *(f"<p class='note'>{html.escape(n)}</p>" for n in notes),
    ]
    plots = 0
    for section in sections:
        if isinstance(section, Table):
            parts.append(_table(section))
            continue
        heading, fig = section
        fig.update_layout(template="plotly_white", height=420, margin={"l": 60, "r": 20, "t": 40, "b": 50})
        parts.append(f"<section><h2>{html.escape(heading)}</h2>")
        parts.append(
            pio.to_html(
                fig,
                include_plotlyjs=(plots == 0),  # inline, once: the file stands alone
                full_html=False,
                div_id=f"plot-{plots}",
                config={"displaylogo": False, "responsive": True},
            )
            + "</section>"
        )
        plots += 1
    parts.append(f"<script>window.kubeschedRowLimit = {ROW_LIMIT};{SCRIPT}</script>")
    parts.append(f"<script>window.kubeschedPlots = {plots};</script></body></html>")
    return "\n".join(parts)


def _table(t: Table) -> str:
    rows = [[r.get(key) for key, _ in t.columns] for r in t.rows]
    data = json.dumps(rows, separators=(",", ":")).replace("</", "<\\/")
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in t.columns)
    note = f"<p class='note'>{html.escape(t.note)}</p>" if t.note else ""
    return (
        f"<section class='data' id='{html.escape(t.key)}' data-file='{html.escape(t.key)}.csv'>"
        f"<h2>{html.escape(t.title)}</h2>{note}<div class='tools'>"
        f"<input type='search' placeholder='Filter rows' aria-label='Filter {html.escape(t.title)}'>"
        "<span class='count'></span><button class='csv' type='button'>Download CSV</button></div>"
        f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody></tbody></table></div>"
        f"<script type='application/json' class='rows'>{data}</script></section>"
    )


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror}", file=path) from None
