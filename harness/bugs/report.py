"""The outputs of ``kraft-chaos bugs``, from its ``bugs.json`` document (harness/bugs/runs.py):
the table (either catalogue's), the Markdown rows of Kafka's (the README's form), the bar chart
and the exit code. A document written before the queue's kinds had Jepsen's names shows them
by today's (checkers/kind_names.py)."""
from __future__ import annotations

from pathlib import Path

from checkers.kind_names import current_counts, current_name
from harness.bugs.runs import paired


def _kinds_text(kinds: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(current_counts(kinds).items(), key=lambda kv: -kv[1])) or "-"


def _declared(b: dict) -> str:
    return ", ".join(dict.fromkeys(current_name(k) for k in b["kinds_declared"]))


def _median(x) -> str:
    return f"{x:.1f}" if x is not None else "-"


def format_table(doc: dict) -> str:
    """The table of a ``bugs.json`` document (either catalogue's)."""
    if paired(doc.get("db")):
        return format_kafka_table(doc)
    lines = [f"{'bug':22} {'class':15} {'jira':12} {'detected':>9} {'median s':>9} {'max run s':>9}  kinds"]
    for b in doc["bugs"]:
        lines.append(f"{b['name']:22} {b['class']:15} {b['jira'] or '-':12} "
                     f"{b['detected']:>4}/{b['runs']:<4} {_median(b['median_detect_s']):>9} "
                     f"{b['max_wall_s']:>9.0f}  {_kinds_text(b['kinds'])}")
    for c in doc["correct"]:
        lines.append(f"correct build, {c['schedule']:8} false alarms {c['false_alarms']}/{c['runs']}"
                     f"{'  errors ' + str(c['errors']) if c['errors'] else ''}  ({c['schedule_text']})")
    return "\n".join(lines)


def format_kafka_table(doc: dict) -> str:
    """The Kafka catalogue's table: per entry, its affected and its fixed release's runs
    (detected/runs on the declared kinds, median time to detect, every anomaly kind seen)."""
    lines = [f"{'jira':12} {'class':32} {'schedule':25} {'declared':20} {'release':10} {'detected':>9} "
             f"{'median s':>9}  all anomalies (runs)"]
    for b in doc["bugs"]:
        for role in ("affected", "fixed"):
            r = b[role]
            label = r["version"] + (f" kv{r['kraft_version']}" if r["kraft_version"] is not None else "")
            errs = f"  errors {r['errors']}" if r["errors"] else ""
            first = role == "affected"
            lines.append(f"{b['jira'] if first else '':12} {b['class'] if first else '':32} "
                         f"{b['schedule'] if first else '':25} "
                         f"{_declared(b) if first else '':20} {label:10} "
                         f"{r['detected']:>4}/{r['runs']:<4} {_median(r['median_detect_s']):>9}  "
                         f"{_kinds_text(r['all_kinds'])}{errs}"
                         f"{'  <- false alarms' if role == 'fixed' and r['detected'] else ''}")
    fa = sum(b["fixed"]["false_alarms"] for b in doc["bugs"])
    fr = sum(b["fixed"]["runs"] for b in doc["bugs"])
    lines.append(f"false alarms (fixed releases showing a declared kind): {fa}/{fr}")
    return "\n".join(lines)


#: the Markdown table of the Kafka catalogue (the README's): its header, then :func:`kafka_markdown_rows`
KAFKA_MARKDOWN_HEADER = ("| JIRA | class | cause | affected | fixed | schedule | declared kinds | detected (affected) "
                         "| median s to detect | false alarms (fixed) | all anomalies, affected / fixed (runs) | command |\n"
                         "|---|---|---|---|---|---|---|---|---|---|---|---|")


def kafka_markdown_rows(doc: dict) -> list[str]:
    """One Markdown row per entry of a Kafka ``bugs.json`` document (:data:`KAFKA_MARKDOWN_HEADER`)."""
    rows = []
    for b in doc["bugs"]:
        a, f = b["affected"], b["fixed"]

        def side(r: dict) -> str:
            return r["version"] + (f" (kraft.version {r['kraft_version']})" if r["kraft_version"] is not None else "")
        rows.append(f"| {b['jira']} | {b['class']} | {b.get('cause', '')} | {side(a)} | {side(f)} | `{b['schedule']}` "
                    f"| {_declared(b)} | {a['detected']}/{a['runs']} | {_median(a['median_detect_s'])} "
                    f"| {f['false_alarms']}/{f['runs']} | {_kinds_text(a['all_kinds'])} / {_kinds_text(f['all_kinds'])} "
                    f"| `{b.get('command', '')}` |")
    return rows


def write_chart(doc: dict, path: Path) -> None:
    """A bar chart (PNG) of detected/runs per bug, false alarms in the title; for Kafka's
    catalogue two bars per bug, the affected and the fixed release."""
    import matplotlib      # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt      # deferred: matplotlib
    kafka = paired(doc.get("db"))
    names = [b["name"] for b in doc["bugs"]]
    arms = [("affected", "#4C9F70"), ("fixed", "#D1495B")] if kafka else [(None, None)]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(arms)
    for j, (role, colour) in enumerate(arms):
        rows = [b[role] if role else b for b in doc["bugs"]]
        rates = [r["detected"] / r["runs"] if r["runs"] else 0.0 for r in rows]
        xs = [i + (j - (len(arms) - 1) / 2) * width for i in range(len(names))]
        colours = colour or ["#4C9F70" if r >= 0.8 else "#D1495B" for r in rates]
        ax.bar(xs, rates, width=width, color=colours,
               label=(f"{role} release" if role else None))
        for x, r, rate in zip(xs, rows, rates):
            ax.text(x, rate + 0.01, f"{r['detected']}/{r['runs']}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("runs showing its anomaly" if kafka else "runs that caught it")
    if kafka:
        fa = sum(b["fixed"]["false_alarms"] for b in doc["bugs"])
        fr = sum(b["fixed"]["runs"] for b in doc["bugs"])
        ax.legend(loc="upper right", fontsize=8)
        ax.set_title(f"kraft-chaos bugs --db kafka: affected vs fixed release ({doc['runs_per_bug']} runs "
                     f"each); false alarms {fa}/{fr}")
    else:
        fa = sum(c["false_alarms"] for c in doc["correct"])
        fr = sum(c["runs"] for c in doc["correct"])
        ax.set_title(f"kraft-chaos bugs: detection per bug ({doc['runs_per_bug']} runs each); "
                     f"false alarms {fa}/{fr}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def exit_code(doc: dict) -> int:
    """0 when every bug was detected in every run and there was no false alarm (for Kafka's
    catalogue: on the affected release, none on the fixed one), else 1."""
    if paired(doc.get("db")):
        missed = any(b["affected"]["detected"] < b["affected"]["runs"] for b in doc["bugs"])
        false_alarms = any(b["fixed"]["false_alarms"] for b in doc["bugs"])
    else:
        missed = any(b["detected"] < b["runs"] for b in doc["bugs"])
        false_alarms = any(c["false_alarms"] for c in doc["correct"])
    return 1 if missed or false_alarms else 0
