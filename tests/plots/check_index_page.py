#!/usr/bin/env python3
"""plots/index_page.py on a small fixture: a few chapters' summary.json files and tiny PNGs,
written here into a temporary folder (nothing is built or run).

Checks that the page
  - links only to files that exist (every relative <img src> and <a href>; every #anchor to an id),
  - has a section for every chapter under chapters/, those with results showing them and the
    others saying they did not run,
  - marks an --exercises run (out/exercises/NN_name, plots/out/exercises/) as such,
  - shows the summary.json values: each number cell's value equals the fixture's at its path, its
    text is that value formatted, and the difference is ours - the reference,
  - with --embed, carries every figure inside the page.
Where a headless Chromium is installed it also renders the page and checks that every image
loaded; otherwise it says that this part is skipped and why.

    check_index_page.py REPO_ROOT
"""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from urllib.parse import unquote

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)
    return cond


def tiny_png(path, rgb=(40, 120, 200)):
    """A valid 2x2 PNG, without matplotlib."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + bytes(rgb) * 2 for _ in range(2))
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


# The fixture: distinct values, so that a number shown from the wrong key would not match.
FIXTURE = {
    "00_collectives": {
        "chapter": "00_collectives", "world_size": 4, "flags": {"device": "auto"},
        "ring_check": {"numel": 1024, "bit_equal": True, "max_abs_diff": 0.0, "bytes_sent_rank0": 6144,
                       "bytes_formula_rank0": 6000},
        "ring_to_library_busbw_ratio": 1.73, "ratio_at_bytes": 16777216,
    },
    "02_recomputation": {
        "chapter": "02_recomputation", "world_size": 1, "flags": {"device": "cpu"},
        "results": {"modes": [
            {"mode": "none", "layer_kept": 8396800, "layer_formula": 8396800, "model_flops": 1107296256,
             "hardware_flops": 1107296256},
            {"mode": "selective", "layer_kept": 4202496, "layer_formula": 4202000, "model_flops": 1107296256,
             "hardware_flops": 1174405120},
            {"mode": "full", "layer_kept": 262144, "layer_formula": 262144, "model_flops": 1107296256,
             "hardware_flops": 1442840576}],
            "gradients_identical_and_formula_exact": False},
    },
    # chapter 08 as a run on ranks writes it: the schedules and the runs under "results", each run
    # with the load it was timed at.
    "08_pipeline_parallel": {
        "chapter": "08_pipeline_parallel", "world_size": 2, "flags": {"device": "auto"},
        "results": {
            "schedules": [{"schedule": "afab", "bubble": 0.375, "bubble_formula": 0.375},
                          {"schedule": "1f1b", "bubble": 0.4, "bubble_formula": 0.375}],
            "runs": [{"schedule": "1f1b", "bubble_measured": 0.61, "bubble_predicted": 0.5,
                      "load_average": 3.5, "cores": 2}]},
    },
    "13_fused_kernels": {
        "chapter": "13_fused_kernels", "world_size": 1, "flags": {"device": "auto"},
        "results": {"bandwidth": [
            {"chain": "adamw", "variant": "unfused", "bytes": 360448, "ms": 0.0035},
            {"chain": "adamw", "variant": "fused", "bytes": 114688, "ms": 0.00135}],
            "load_average": 0.75, "cores": 16, "training_max_relative_loss_gap": 1.5e-7},
    },
}
EXERCISE_FIXTURE = {
    "01_memory": {
        "chapter": "01_memory", "world_size": 1, "flags": {"device": "auto"},
        "results": {"layer_activation_bytes": {"exercise": 20979000, "declared": 20979712, "measured": 20979712},
                    "breakdown": {"parameter": {"measured": 13116416, "expected": 13116416}},
                    "all_match": False},
    },
}
FIGURES = {"00_collectives": ["ch00_bandwidth.png"],
           "02_recomputation": ["ch02_recompute_memory.png"],
           "08_pipeline_parallel": ["ch08_gantt.png", "ch08_bubble.png", "ch08_pp_memory.png",
                                    "ch08_gantt_measured.png"],
           "13_fused_kernels": ["ch13_bandwidth.png"]}  # ch13_bandwidth_gpu.png: drawn only with a GPU
EXERCISE_FIGURES = {"01_memory": ["ch01_memory_timeline.png"]}  # ch01_memory_vs_seq.png left out


class PageParser(html.parser.HTMLParser):
    """The page's images, links, ids, chapter sections (their text), and number cells."""

    def __init__(self):
        super().__init__()
        self.imgs, self.links, self.ids = [], [], set()
        self.sections = {}       # chapter -> {"status": ..., "text": [...], "exercises_text": [...]}
        self.cells = []          # dicts: chapter, exercises, class, attrs, text
        self.rows = []           # per <tr>: list of cells
        self._chapter = None
        self._in_ex = False
        self._depth = []         # stack of section kinds
        self._cell = None
        self._row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "section":
            cls = a.get("class", "")
            if cls == "chapter":
                self._chapter = a["data-chapter"]
                self.sections[self._chapter] = {"status": a.get("data-status"), "text": [], "exercises_text": []}
            elif cls == "exercises":
                self._in_ex = True
            self._depth.append(cls)
        if tag == "tr":
            self._row = []
        if tag == "td":
            self._cell = {"chapter": self._chapter, "exercises": self._in_ex, "class": a.get("class", ""),
                          "attrs": a, "text": ""}

    def handle_endtag(self, tag):
        if tag == "section" and self._depth:
            cls = self._depth.pop()
            if cls == "exercises":
                self._in_ex = False
            elif cls == "chapter":
                self._chapter = None
        if tag == "td" and self._cell is not None:
            self.cells.append(self._cell)
            if self._row is not None:
                self._row.append(self._cell)
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data
        if self._chapter is not None:
            self.sections[self._chapter]["exercises_text" if self._in_ex else "text"].append(data)


def run_page(script, root, out_dir, results, embed=False):
    cmd = [sys.executable, script, "--out", out_dir, "--results", results, "--root", root]
    if embed:
        cmd.append("--embed")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    print("$ " + " ".join(cmd) + "\n" + p.stdout + p.stderr, end="")
    check(p.returncode == 0, f"index_page.py exited {p.returncode}")
    with open(os.path.join(out_dir, "index.html"), encoding="utf-8") as f:
        text = f.read()
    parser = PageParser()
    parser.feed(text)
    return text, parser


def check_links(parser, out_dir):
    for src in parser.imgs:
        check(not src.startswith(("http:", "https:", "//")), f"<img src={src}> reaches the network")
        if not src.startswith("data:"):
            check(os.path.isfile(os.path.join(out_dir, unquote(src))), f"<img src={src}> does not exist")
    for href in parser.links:
        check(not href.startswith(("http:", "https:", "//")), f"<a href={href}> reaches the network")
        if href.startswith("#"):
            check(href[1:] in parser.ids, f"<a href={href}>: no element has that id")
        else:
            check(os.path.isfile(os.path.join(out_dir, unquote(href.split("#")[0]))), f"<a href={href}> does not exist")
    print(f"links: {len(parser.imgs)} images, {len(parser.links)} links checked")


def check_numbers(parser, index_page, docs):
    """Every number cell: its value is the fixture's at its path, its text that value formatted;
    each row's difference is ours - ref."""
    n = 0
    for row in parser.rows:
        by = {c["class"].split()[0] if c["class"] else "": c for c in row}
        for kind in ("num ours", "num ref"):
            cell = next((c for c in row if c["class"] == kind), None)
            if cell is None:
                continue
            a = cell["attrs"]
            doc = docs[(cell["chapter"], cell["exercises"])]
            want = index_page.resolve(doc, a["data-path"], a.get("data-agg", "first"))
            got = json.loads(a["data-value"])
            check(got == want, f"chapter {cell['chapter']}: {a['data-path']} shows {got!r}, summary.json has {want!r}")
            unit = a.get("data-unit") or None
            check(cell["text"] == index_page.fmt(want, unit),
                  f"chapter {cell['chapter']}: {a['data-path']} reads '{cell['text']}', not "
                  f"'{index_page.fmt(want, unit)}'")
            n += 1
        ours = next((c for c in row if c["class"] == "num ours"), None)
        ref = next((c for c in row if c["class"] == "num ref"), None)
        diff = next((c for c in row if c["class"] == "num diff"), None)
        if ours and ref and diff:
            o, r = json.loads(ours["attrs"]["data-value"]), json.loads(ref["attrs"]["data-value"])
            want = index_page.difference(o, r, ours["attrs"].get("data-unit") or None)
            check(diff["text"] == (want or ""), f"{ours['attrs']['data-path']}: difference '{diff['text']}', "
                                                f"expected '{want}'")
        del by
    return n


def expect_value(parser, chapter, path, value, exercises=False):
    cells = [c for c in parser.cells if c["chapter"] == chapter and c["exercises"] == exercises
             and c["attrs"].get("data-path") == path]
    check(cells and json.loads(cells[0]["attrs"]["data-value"]) == value,
          f"chapter {chapter}{' (exercises)' if exercises else ''}: no cell shows {path} = {value!r}")


def headless_render(page, out_dir):
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome",
                                              "headless_shell") if shutil.which(b)), None)
    if not browser:
        print("SKIPPED rendering in a headless browser: no chromium, chromium-browser, google-chrome or "
              "headless_shell on PATH (the links were checked as files instead)")
        return
    # A copy of the page with a script that reports, in the DOM, how many images loaded.
    probe = os.path.join(out_dir, "index_probe.html")
    script = ("<script>window.addEventListener('load',function(){var i=document.images,n=0;"
              "for(var k=0;k<i.length;k++)if(i[k].complete&&i[k].naturalWidth>0)n++;"
              "var p=document.createElement('p');p.id='probe';p.textContent='loaded '+n+' of '+i.length;"
              "document.body.appendChild(p);});</script>")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(page.replace("loading=\"lazy\"", "").replace("</body>", script + "</body>"))
    try:
        p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                            "--virtual-time-budget=5000", "--dump-dom", "file://" + probe],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"SKIPPED rendering in a headless browser: {browser} did not run ({e})")
        return
    import re
    m = re.search(r"loaded (\d+) of (\d+)", p.stdout)
    if not m:
        print(f"SKIPPED rendering in a headless browser: {browser} printed no DOM (exit {p.returncode}): "
              f"{p.stderr.strip()[:300]}")
        return
    check(m.group(1) == m.group(2), f"headless {browser}: {m.group(0)} images")
    print(f"headless {browser}: {m.group(0)} images")


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    script = os.path.join(root, "plots", "index_page.py")
    sys.path.insert(0, os.path.join(root, "plots"))
    sys.dont_write_bytecode = True  # nothing written into the source tree
    import index_page  # the same formatting and paths as the page (the values come from the fixture)

    chapters = sorted(n for n in os.listdir(os.path.join(root, "chapters"))
                      if n[:2].isdigit() and os.path.isdir(os.path.join(root, "chapters", n)))
    tmp = tempfile.mkdtemp(prefix="usp_index_page_")
    try:
        results, out_dir = os.path.join(tmp, "out"), os.path.join(tmp, "plots", "out")
        docs = {}
        for name, doc in FIXTURE.items():
            write_json(os.path.join(results, name, "summary.json"), doc)
            docs[(name[:2], False)] = doc
            for png in FIGURES[name]:
                tiny_png(os.path.join(out_dir, png))
        for name, doc in EXERCISE_FIXTURE.items():
            write_json(os.path.join(results, "exercises", name, "summary.json"), doc)
            docs[(name[:2], True)] = doc
            for png in EXERCISE_FIGURES[name]:
                tiny_png(os.path.join(out_dir, "exercises", png), (200, 90, 20))
        # A figure that the table has no caption for still appears.
        tiny_png(os.path.join(out_dir, "ch13_extra_view.png"))

        page, parser = run_page(script, root, out_dir, results)
        check_links(parser, out_dir)

        # A section per chapter; with results: shown, without: "did not run".
        for name in chapters:
            nn = name[:2]
            if not check(nn in parser.sections, f"chapter {nn}: no section"):
                continue
            s = parser.sections[nn]
            text = " ".join(s["text"])
            check(f"chapters/{name}/README.md" in text, f"chapter {nn}: no link to its lesson")
            if name in FIXTURE:
                check(s["status"] == "ran" and "Did not run" not in text, f"chapter {nn}: ran but not shown so")
            elif name in EXERCISE_FIXTURE:
                check(s["status"] == "exercises", f"chapter {nn}: ran with --exercises, status {s['status']}")
                check("Did not run" in text, f"chapter {nn}: the reference did not run, the page does not say so")
            else:
                check(s["status"] == "none" and "Did not run" in text, f"chapter {nn}: did not run, not said")
        for name in FIGURES:
            for png in FIGURES[name]:
                check(png in parser.imgs, f"{png} not on the page")
        check("ch13_extra_view.png" in parser.imgs, "a figure without a caption in the table is left out")
        check("gpu" in " ".join(parser.sections["13"]["text"]).lower(),
              "chapter 13: the figure drawn only with a GPU is not explained")

        # The --exercises run, marked as such, with its figures from plots/out/exercises/.
        ex = parser.sections["01"]
        ex_text = " ".join(ex["exercises_text"])
        check("Ran with --exercises" in ex_text, "chapter 01: the --exercises run is not marked")
        check("exercises/ch01_memory_timeline.png" in parser.imgs, "chapter 01: the exercise figure is not shown")
        check("exercises/ch01_memory_vs_seq.png: not drawn" in ex_text,
              "chapter 01: the exercise figure that was not drawn is not mentioned")

        # The numbers.
        n = check_numbers(parser, index_page, docs)
        check(n >= 15, f"only {n} number cells on the page")
        expect_value(parser, "00", "ring_check.bytes_sent_rank0", 6144)
        expect_value(parser, "00", "ring_check.bytes_formula_rank0", 6000)
        expect_value(parser, "00", "ring_to_library_busbw_ratio", 1.73)
        expect_value(parser, "02", "results.modes[mode=selective].layer_formula", 4202000)
        expect_value(parser, "02", "results.gradients_identical_and_formula_exact", False)
        expect_value(parser, "08", "results.schedules[schedule=1f1b].bubble | schedules[schedule=1f1b].bubble", 0.4)
        expect_value(parser, "08", "results.runs[schedule=1f1b].bubble_measured", 0.61)
        expect_value(parser, "13", "results.bandwidth[chain=adamw][variant=fused].bytes", 114688)
        expect_value(parser, "01", "results.layer_activation_bytes.exercise", 20979000, exercises=True)
        diff = [c for c in parser.cells if c["chapter"] == "00" and c["class"] == "num diff"]
        check(diff and diff[0]["text"].startswith("+144 B"), f"chapter 00: difference {diff and diff[0]['text']!r}")
        # Keys this fixture lacks: said, not invented.
        check("not in this run's summary.json" in " ".join(parser.sections["08"]["text"]),
              "chapter 08: a number missing from summary.json is not marked as missing")
        # The machine and load of the timings.
        t08, t13 = " ".join(parser.sections["08"]["text"]), " ".join(parser.sections["13"]["text"])
        check("load 3.50" in t08 and "on 2 cores" in t08 and "busier than its cores" in t08,
              "chapter 08: the run's load is not shown")
        check("load 0.75" in t13 and "on 16 cores" in t13 and "busier" not in t13, "chapter 13: load not shown")
        check("no machine load" in " ".join(parser.sections["02"]["text"]),
              "chapter 02: records no load and the page does not say so")

        headless_render(page, out_dir)

        # --embed: one file, every figure inside it.
        embedded, eparser = run_page(script, root, out_dir, results, embed=True)
        check(eparser.imgs and all(s.startswith("data:image/png;base64,") for s in eparser.imgs),
              "--embed left an image outside the page")
        check(len(eparser.imgs) == len(parser.imgs), "--embed changed the number of images")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("index page: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
