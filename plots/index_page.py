#!/usr/bin/env python3
"""The course run on one page: plots/out/index.html, a section per chapter.

    python3 plots/index_page.py --out plots/out --results out

Each chapter that ran (out/NN_name/summary.json) gets its figures (plots/out/chNN_*.png, captioned
with the playbook figure each regenerates), the few numbers that matter read from its
summary.json (ours beside the formula's or the playbook's, with the difference), the machine and
load its timings came from where summary.json records them, and a link to its lesson. A run with
--exercises (out/exercises/NN_name, plots/out/exercises/) is shown as such; a chapter that did not
run says so. ./usp run and ./usp plots call this after the figures. Not a figure itself (./usp
plots runs plots/chNN_*.py only); standard library only: no network, no JavaScript.

Adding a chapter is one entry in CHAPTERS (plots/index_page_chapters.py): its figures' captions
and its numbers, each number a path into summary.json (see resolve()).
"""
import argparse
import base64
import html
import json
import math
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT_DEFAULT = os.path.dirname(HERE)


from index_page_chapters import CHAPTERS  # noqa: E402  (the table: plots/index_page_chapters.py)


# ---- summary.json paths -------------------------------------------------------------------------

_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


class Missing(Exception):
    pass


def _step(values, multi, token):
    key, sel = token
    if key is not None:
        out = []
        for v in values:
            if not isinstance(v, dict) or key not in v:
                if multi:
                    continue
                raise Missing(key)
            out.append(v[key])
        return out, multi
    if sel == "*" or "=" in sel:
        lists = values if not multi else [values]
        out = []
        for lst in lists:
            if not isinstance(lst, list):
                raise Missing(f"[{sel}] on a non-list")
            for e in lst:
                if sel == "*":
                    out.append(e)
                    continue
                neg = "!=" in sel
                k, want = sel.split("!=" if neg else "=", 1)
                has = isinstance(e, dict) and k in e and str(e[k]) == want
                if isinstance(e, dict) and k in e and (has != neg):
                    out.append(e)
        return out, True
    try:
        i = int(sel)
    except ValueError:
        raise Missing(f"bad selector [{sel}]")
    out = []
    for v in values:
        if not isinstance(v, list) or not -len(v) <= i < len(v):
            raise Missing(f"[{i}]")
        out.append(v[i])
    return out, multi


def resolve(doc, path, agg="first"):
    """The value at path in doc (see the table's comment), or raises Missing."""
    last = None
    for alt in path.split(" | "):
        try:
            tokens = [(m.group(1), m.group(2)) for m in _TOKEN.finditer(alt.strip())]
            values, multi = [doc], False
            for t in tokens:
                values, multi = _step(values, multi, t)
            if not values:
                raise Missing(alt + ": nothing matches")
            if not multi or agg == "first":
                return values[0]
            if agg == "count":
                return len(values)
            if agg == "all":
                return all(bool(v) for v in values)
            nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if not nums:
                raise Missing(alt + ": no numbers")
            return max(nums) if agg == "max" else min(nums)
        except Missing as e:
            last = e
    raise last or Missing(path)


# ---- formatting -----------------------------------------------------------------------------------

def fmt(value, unit=None):
    """The text a value is shown as (the test checks the page with this same function)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)):
        return str(value)
    if unit == "bytes":
        s = f"{int(value):,} B" if float(value).is_integer() else f"{value:,.1f} B"
        return s + (f" ({value / 2**20:.2f} MiB)" if abs(value) >= 2**20 else "")
    if unit == "percent":
        return f"{100 * value:.1f}%"
    if unit == "pct":
        return f"{value:.1f}%"
    if unit == "seconds":
        return f"{value:.4g} s"
    if unit == "ms":
        return f"{value:.4g} ms"
    if unit == "ratio":
        return f"{value:.3g}×"
    if isinstance(value, int) or (unit in ("count", "flops") and float(value).is_integer()):
        return f"{int(value):,}"
    if value == 0:
        return "0"
    return f"{value:.6g}"


def difference(ours, ref, unit):
    """ours − ref, and relative to ref, as text; None when they are not both numbers."""
    def is_num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if not (is_num(ours) and is_num(ref)):
        return None
    d = ours - ref
    if d == 0:
        return "0 (equal)"
    text = ("+" if d > 0 else "−") + fmt(abs(d), unit if unit not in ("percent", "pct") else unit)
    if unit == "percent":
        text = ("+" if d > 0 else "−") + f"{100 * abs(d):.1f} points"
    if ref != 0:
        rel = 100 * d / abs(ref)
        text += f" ({'+' if rel > 0 else '−'}{abs(rel):.3g}%)"
    return text


def fill_label(label, doc):
    def sub(m):
        try:
            return fmt(resolve(doc, m.group(1)))
        except Missing:
            return "?"
    return re.sub(r"\{([^{}]+)\}", sub, label)


# ---- reading a run --------------------------------------------------------------------------------

def chapter_dirs(root):
    d = os.path.join(root, "chapters")
    names = sorted(n for n in os.listdir(d) if re.match(r"^\d\d_", n) and os.path.isdir(os.path.join(d, n)))
    return {n[:2]: n for n in names}


def lesson_title(root, name):
    try:
        with open(os.path.join(root, "chapters", name, "README.md"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("# "):
                    return line[2:].strip()
    except OSError:
        pass
    return "Chapter " + name


def needs_gpu(root, name):
    try:
        with open(os.path.join(root, "chapters", name, "run.conf"), encoding="utf-8") as f:
            return any(re.match(r"^\s*requires=[\"']?gpu", line) for line in f)
    except OSError:
        return False


def read_summary(folder):
    """(summary dict or None, note): the folder's summary.json."""
    path = os.path.join(folder, "summary.json")
    if not os.path.isfile(path):
        return None, "the run wrote no summary.json (it may have stopped early)"
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        return (doc, None) if isinstance(doc, dict) else (None, "summary.json is not a JSON object")
    except (OSError, ValueError) as e:
        return None, f"summary.json could not be read: {e}"


def machine_lines(doc, folder):
    """What summary.json records about the machine and its load, as lines of text."""
    lines = []
    if isinstance(doc.get("device"), str):
        lines.append(f"device: {doc['device']}")
    flags = doc.get("flags") if isinstance(doc.get("flags"), dict) else {}
    if "device" in flags and "device" not in doc:
        lines.append(f"device asked for: --device {flags['device']}")
    if isinstance(doc.get("world_size"), int):
        lines.append(f"ranks: {doc['world_size']}")
    loads = []

    def walk(x, where):
        if isinstance(x, dict):
            if "load_average" in x:
                loads.append((x.get("load_average"), x.get("cores"), where))
            for k, v in x.items():
                walk(v, where + [k])
        elif isinstance(x, list):
            for i, v in enumerate(x):
                label = (v.get("schedule") or v.get("label") or str(i)) if isinstance(v, dict) else str(i)
                walk(v, where + [str(label)])
    walk(doc, [])
    for load, cores, where in loads:
        what = " (" + " ".join(w for w in where if w != "results") + ")" if [w for w in where if w != "results"] else ""
        if not isinstance(load, (int, float)) or load < 0:
            lines.append(f"load unknown{what}")
            continue
        busy = isinstance(cores, int) and load > cores
        lines.append(f"timed at load {load:.2f} (1-minute average) on {cores} cores{what}"
                     + (": busier than its cores, so the times are the sharing's" if busy else ""))
    if not loads:
        lines.append("summary.json records no machine load for these timings")
    try:
        t = os.path.getmtime(os.path.join(folder, "summary.json"))
        lines.append("written " + time.strftime("%Y-%m-%d %H:%M", time.localtime(t)))
    except OSError:
        pass
    return lines


# ---- the page -------------------------------------------------------------------------------------

CSS = """
body { font-family: sans-serif; max-width: 1100px; margin: 1em auto; padding: 0 1em; color: #222; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .9em; color: #444; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
td, th { border: 1px solid #ccc; padding: .2em .5em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.status-ran { color: #185; } .status-exercises { color: #a60; } .status-none { color: #888; }
.note { color: #a33; } .machine { font-size: .9em; color: #555; }
section.exercises { border-left: 4px solid #e90; padding-left: 1em; }
"""


class Page:
    def __init__(self, out_dir, embed):
        self.out_dir = out_dir
        self.embed = embed
        self.parts = []

    def add(self, s):
        self.parts.append(s)

    def img_src(self, rel):
        if not self.embed:
            return rel
        with open(os.path.join(self.out_dir, rel), "rb") as f:
            return "data:image/png;base64," + base64.b64encode(f.read()).decode("ascii")


def e(s):
    return html.escape(str(s), quote=True)


def numbers_table(page, entry, doc, kind):
    rows = []
    for n in entry.get("numbers", []):
        label = fill_label(n["label"], doc)
        try:
            ours = resolve(doc, n["ours"], n["agg"])
        except Missing:
            rows.append(f'<tr><td>{e(label)}</td><td class="num missing" colspan="4">not in this run\'s '
                        f'summary.json</td></tr>')
            continue
        cells = [f'<td>{e(label)}</td>',
                 f'<td class="num ours" data-path="{e(n["ours"])}" data-agg="{e(n["agg"])}" '
                 f'data-unit="{e(n["unit"] or "")}" data-value="{e(json.dumps(ours))}">{e(fmt(ours, n["unit"]))}</td>']
        ref = None
        if n["ref"]:
            try:
                ref = resolve(doc, n["ref"])
                cells.append(f'<td class="num ref" data-path="{e(n["ref"])}" data-unit="{e(n["unit"] or "")}" '
                             f'data-value="{e(json.dumps(ref))}">{e(fmt(ref, n["unit"]))}</td>'
                             f'<td>{e(n["ref_label"] or "")}</td>')
            except Missing:
                cells.append(f'<td class="num missing">—</td><td>{e(n["ref_label"] or "")} (not in summary.json)</td>')
        else:
            cells.append('<td></td><td></td>')
        d = difference(ours, ref, n["unit"]) if n["ref"] else None
        cells.append(f'<td class="num diff">{e(d) if d is not None else ""}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    if rows:
        page.add('<table class="numbers"><tr><th>what</th><th>ours</th><th>against</th><th>whose</th>'
                 '<th>difference</th></tr>\n' + "\n".join(rows) + "</table>")


def figures_block(page, nn, entry, sub, kind):
    folder = os.path.join(page.out_dir, sub) if sub else page.out_dir
    listed = set()
    for f in entry.get("figures", []):
        listed.add(f["png"])
        rel = (sub + "/" if sub else "") + f["png"]
        if os.path.isfile(os.path.join(page.out_dir, rel)):
            page.add(f'<figure><img src="{e(page.img_src(rel))}" alt="{e(f["png"])}" loading="lazy">'
                     f'<figcaption><code>{e(rel)}</code>: {e(f["caption"])}</figcaption></figure>')
        elif f["only"]:
            page.add(f'<p class="machine">{e(rel)}: not drawn (it is drawn only {e(f["only"])}).</p>')
        else:
            page.add(f'<p class="note">{e(rel)}: not drawn; <code>./usp plots {nn}</code> draws it from the results.</p>')
    extra = sorted(n for n in (os.listdir(folder) if os.path.isdir(folder) else [])
                   if n.startswith(f"ch{nn}_") and n.endswith(".png") and n not in listed)
    for name in extra:
        rel = (sub + "/" if sub else "") + name
        page.add(f'<figure><img src="{e(page.img_src(rel))}" alt="{e(name)}" loading="lazy">'
                 f'<figcaption><code>{e(rel)}</code> (no caption yet in plots/index_page.py)</figcaption></figure>')


def run_block(page, nn, entry, folder, sub, kind):
    """One run's figures, numbers and machine: kind is 'reference' or 'exercises'."""
    doc, note = read_summary(folder)
    if note:
        page.add(f'<p class="note">{e(note)}</p>')
    figures_block(page, nn, entry, sub, kind)
    if doc is not None:
        numbers_table(page, entry, doc, kind)
        page.add('<p class="machine">' + "<br>".join(e(x) for x in machine_lines(doc, folder)) + "</p>")


def build(root, out_dir, results_dir, embed=False):
    chapters = chapter_dirs(root)
    for nn in CHAPTERS:
        if nn not in chapters:
            print(f"index_page: the table has chapter {nn}, which is not under chapters/", file=sys.stderr)
    page = Page(out_dir, embed)
    status = {}
    for nn, name in chapters.items():
        ref = os.path.isdir(os.path.join(results_dir, name))
        ex = os.path.isdir(os.path.join(results_dir, "exercises", name))
        status[nn] = (ref, ex)
    page.add('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
             '<title>Ultra-Scale Playbook in C++: the course run</title>'
             f'<style>{CSS}</style></head><body>')
    page.add('<h1>The course run</h1>')
    page.add(f'<p>Every chapter of <code>./usp run</code>: its figures (each caption says which playbook figure it '
             f'regenerates), the numbers that matter from its <code>summary.json</code> beside the formula\'s or the '
             f'playbook\'s, the machine and load behind its timings, and its lesson. Results read from '
             f'<code>{e(os.path.relpath(results_dir, out_dir))}</code>; generated '
             f'{e(time.strftime("%Y-%m-%d %H:%M"))}.</p>')
    page.add('<table class="contents"><tr><th>chapter</th><th>status</th></tr>')
    for nn, name in chapters.items():
        ref, ex = status[nn]
        if ref and ex:
            s, cls = "ran (and with --exercises)", "ran"
        elif ref:
            s, cls = "ran", "ran"
        elif ex:
            s, cls = "ran with --exercises only", "exercises"
        else:
            s, cls = "did not run", "none"
        page.add(f'<tr><td><a href="#ch{nn}">{e(lesson_title(root, name))}</a></td>'
                 f'<td class="status-{cls}">{e(s)}</td></tr>')
    page.add('</table>')
    for nn, name in chapters.items():
        entry = CHAPTERS.get(nn, {})
        ref, ex = status[nn]
        lesson = os.path.relpath(os.path.join(root, "chapters", name, "README.md"), out_dir).replace(os.sep, "/")
        state = "ran" if ref else ("exercises" if ex else "none")
        page.add(f'<section id="ch{nn}" class="chapter" data-chapter="{nn}" data-status="{state}">')
        page.add(f'<h2>{e(lesson_title(root, name))}</h2>')
        page.add(f'<p>Lesson: <a href="{e(lesson)}">chapters/{e(name)}/README.md</a></p>')
        if not ref and not ex:
            why = " It needs a CUDA GPU: <code>./usp run</code> skips it where none is visible." \
                if needs_gpu(root, name) else ""
            page.add(f'<p class="status-none did-not-run">Did not run: no results in '
                     f'<code>out/{e(name)}/</code>.{why} <code>./usp run {nn}</code> runs it.</p>')
        if ex and not ref:
            page.add(f'<p class="status-none did-not-run">Did not run from the reference solution: no results in '
                     f'<code>out/{e(name)}/</code>; only your <code>--exercises</code> run below. '
                     f'<code>./usp run {nn}</code> runs the reference.</p>')
        if ref:
            run_block(page, nn, entry, os.path.join(results_dir, name), "", "reference")
        if ex:
            page.add(f'<section class="exercises" data-chapter="{nn}">')
            page.add(f'<h3>Ran with --exercises: your exercise files (exercises/{e(name)}/)</h3>')
            page.add(f'<p class="status-exercises">This run is <code>./usp run {nn} --exercises</code>: results in '
                     f'<code>out/exercises/{e(name)}/</code>, figures in <code>plots/out/exercises/</code>; its '
                     f'numbers are your code\'s, not the reference solution\'s.</p>')
            run_block(page, nn, entry, os.path.join(results_dir, "exercises", name), "exercises", "exercises")
            page.add('</section>')
        page.add('</section>')
    page.add('</body></html>\n')
    return "\n".join(page.parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="plots/out", help="folder with the figures; index.html is written there")
    ap.add_argument("--results", default="out", help="the chapters' results (out/NN_name, out/exercises/NN_name)")
    ap.add_argument("--root", default=ROOT_DEFAULT, help="the repository (its chapters/ and lessons)")
    ap.add_argument("--embed", action="store_true", help="embed the PNGs in the page (one file to send)")
    args = ap.parse_args()
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    text = build(os.path.abspath(args.root), out_dir, os.path.abspath(args.results), args.embed)
    path = os.path.join(out_dir, "index.html")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    print(f"wrote {os.path.join(args.out, 'index.html')}")


if __name__ == "__main__":
    main()
