"""The outputs of ``kraft-chaos matrix``: the summary table and the JUnit XML (``matrix.xml``).

Both read the ``matrix.json`` document (:func:`harness.matrix.cells.run_matrix`):
``{"name", "cells": [{"id", "db", "workload", "client"?, "transaction_version"?, "nemesis",
"seed", "verdict", "valid", "anomalies": {kind: n}, "store", "wall_s", "error", "repeat",
"summary"?}], "skipped": [{"db", "workload", "reason"}], ...}`` (``client`` and
``transaction_version``: the matrix file's client axes, None or absent where a cell has none).

JUnit: one ``<testsuite>``; a ``<testcase>`` per cell (classname
``kraft-chaos.matrix.<db>.<workload>``, name ``<nemesis> seed <n>`` and the client axes'
values, ``java tv2``, time in
s) with ``<properties>`` named as the pytest plugin's (``kraft_chaos.verdict``,
``kraft_chaos.anomalies``, ``kraft_chaos.anomaly.<kind>``,
``kraft_chaos.store``, ``kraft_chaos.seed``, ``kraft_chaos.repeat``, ...):
``<failure>`` for an invalid or unknown verdict, ``<error>`` for a run that
failed, ``<skipped>`` for a cell interrupted or not run; one skipped testcase
per workload/target pair the registry rules out.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

PROP = "kraft_chaos."
#: what a cell's verdict can be in matrix.json, in the summary's order
VERDICTS = ("valid", "invalid", "unknown", "error", "interrupted", "not-run")


def anomaly_text(anomalies: dict[str, int], sep: str = " ") -> str:
    """``"lost-write 2, phantom 1"`` (``sep`` between kind and count), or ``"-"``."""
    return ", ".join(f"{k}{sep}{n}" for k, n in anomalies.items()) or "-"


#: the client axes a cell may carry (harness/matrix/file.py AXES): field -> (table column,
#: prefix of the value in a JUnit test name)
CLIENT_COLUMNS = {"client": ("client", ""), "transaction_version": ("txn version", "tv")}


def _client_values(cell: dict) -> str:
    """``java tv2``: the cell's client axes' values, space-separated; "" when none."""
    return " ".join(f"{prefix}{cell[k]}" for k, (_col, prefix) in CLIENT_COLUMNS.items()
                    if cell.get(k) is not None)


def format_table(doc: dict) -> str:
    """The plain-text summary of a matrix document: one row per cell (target, workload, the
    client axes when any cell has them (client, transaction version), nemesis, seed, verdict,
    anomalies, wall s, store or error), then the counts."""
    shown = [k for k in CLIENT_COLUMNS if any(c.get(k) is not None for c in doc["cells"])]
    head = ("target", "workload", *(CLIENT_COLUMNS[k][0] for k in shown), "nemesis", "seed", "verdict",
            "anomalies", "s", "store / error")
    rows = [(c.get("target") or c["db"], c["workload"], *("-" if c.get(k) is None else str(c[k]) for k in shown),
             c["nemesis"], str(c["seed"]), c["verdict"].upper(),
             anomaly_text(c["anomalies"]), f"{c['wall_s']:.0f}" if c["wall_s"] is not None else "-",
             c["error"] or c["store"] or "-") for c in doc["cells"]]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(r, widths)) + "  " + r[-1] for r in [head, *rows]]
    lines.extend(f"skipped: {s['reason']}" for s in doc.get("skipped", []))
    counts = doc.get("counts") or {}
    lines.append(f"{len(doc['cells'])} cell(s): " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts.get(v))
                 + (" (interrupted)" if doc.get("interrupted") else "")
                 + f"; {doc.get('wall_s', 0):.0f} s")
    return "\n".join(lines)


def _props(parent: ET.Element, props: dict) -> None:
    el = ET.SubElement(parent, "properties")
    for k, v in props.items():
        ET.SubElement(el, "property", name=PROP + k, value=str(v))


def _case(suite: ET.Element, cell: dict) -> str | None:
    """Add ``cell``'s testcase to ``suite``; returns ``failure``, ``error``, ``skipped`` or None."""
    target = (cell.get("target") or cell["db"]).replace(".", "_")
    variant = _client_values(cell)
    tc = ET.SubElement(suite, "testcase", classname=f"kraft-chaos.matrix.{target}.{cell['workload']}",
                       name=f"{cell['nemesis']} seed {cell['seed']}" + (f" {variant}" if variant else ""),
                       time=f"{cell['wall_s'] or 0:.3f}")
    verdict = cell["verdict"]
    props = {"verdict": verdict.upper(),
             "anomalies": anomaly_text(cell["anomalies"], "=") if cell["anomalies"] else "none",
             **{f"anomaly.{k}": n for k, n in cell["anomalies"].items()},
             "store": cell["store"] or "", "db": cell["db"], "workload": cell["workload"],
             "nemesis": cell["nemesis"], "seed": cell["seed"], "repeat": cell["repeat"],
             **({"kafka_version": cell["kafka_version"]} if cell.get("kafka_version") else {}),
             **{k: cell[k] for k in CLIENT_COLUMNS if cell.get(k) is not None}}
    if cell.get("error"):
        props["error"] = cell["error"]
    _props(tc, props)
    where = f" (store: {cell['store']})" if cell["store"] else ""
    if verdict in ("invalid", "unknown"):
        found = anomaly_text(cell["anomalies"]) if cell["anomalies"] else "no anomalies"
        el = ET.SubElement(tc, "failure", type=verdict,
                           message=f"kraft-chaos run {verdict.upper()}: {found}{where}")
        el.text = f"{cell.get('summary') or ''}\nrepeat with: {cell['repeat']}"
        return "failure"
    if verdict == "error":
        el = ET.SubElement(tc, "error", type=cell.get("error_kind") or "harness",
                           message=f"{cell['error']}{where}")
        el.text = f"{cell['error']}\nrepeat with: {cell['repeat']}"
        return "error"
    if verdict in ("interrupted", "not-run"):
        ET.SubElement(tc, "skipped", message="interrupted" if verdict == "interrupted"
                      else "not run: the matrix was interrupted")
        return "skipped"
    return None


def write_junit(doc: dict, path: Path) -> None:
    """Write the matrix document as JUnit XML at ``path`` (atomically)."""
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name=f"kraft-chaos matrix {doc['name']}",
                          timestamp=doc.get("started") or "", time=f"{doc.get('wall_s') or 0:.3f}")
    _props(suite, {"file": doc.get("file", ""), "interrupted": str(bool(doc.get("interrupted"))).lower()})
    tally = {"failure": 0, "error": 0, "skipped": 0}
    for cell in doc["cells"]:
        kind = _case(suite, cell)
        if kind:
            tally[kind] += 1
    for s in doc.get("skipped", []):
        tc = ET.SubElement(suite, "testcase", classname=f"kraft-chaos.matrix.{s['db']}.{s['workload']}",
                           name="unsupported", time="0.000")
        ET.SubElement(tc, "skipped", message=s["reason"])
        tally["skipped"] += 1
    n = len(doc["cells"]) + len(doc.get("skipped", []))
    for el in (root, suite):
        el.set("tests", str(n))
        el.set("failures", str(tally["failure"]))
        el.set("errors", str(tally["error"]))
        el.set("skipped", str(tally["skipped"]))
    ET.indent(root)
    tmp = path.with_name(f".{path.name}.tmp")
    ET.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)
