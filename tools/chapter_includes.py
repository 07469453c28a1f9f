#!/usr/bin/env python3
"""Which other chapters, which parts of common/ and which kernels/ each chapter includes.

Reads every #include "chapters/...", "common/..." and "kernels/..." of chapters/NN_*,
solutions/NN_* and exercises/NN_* and prints one Markdown table row per chapter: the table
of docs/ARCHITECTURE.md, section 6 ("Which chapter may use which"). Usage:
    python3 tools/chapter_includes.py [ROOT]      (ROOT: the repository, default: this one)
"""
import collections
import os
import re
import sys

INCLUDE = re.compile(r'#include\s+"((chapters|common|kernels)/[^"]+)"')


def chapter_includes(root):
    uses = collections.defaultdict(lambda: collections.defaultdict(set))
    for top in ('chapters', 'solutions', 'exercises'):
        for folder, _, files in os.walk(os.path.join(root, top)):
            parts = os.path.relpath(folder, root).split(os.sep)
            if len(parts) < 2:
                continue
            chapter = parts[1][:2]
            for name in files:
                if not name.endswith(('.cpp', '.hpp', '.cu', '.cuh')):
                    continue
                with open(os.path.join(folder, name), errors='replace') as f:
                    for m in INCLUDE.finditer(f.read()):
                        path = m.group(1).split('/')
                        if path[0] == 'chapters' and path[1][:2] != chapter:
                            uses[chapter]['chapters'].add(path[1][:2])
                        elif path[0] == 'common':
                            # common/x.hpp: the core's top level; common/dir/...: that part
                            uses[chapter]['common'].add(path[1] if len(path) > 2 else 'core')
                        elif path[0] == 'kernels':
                            uses[chapter]['kernels'].add(path[1])
    return uses


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    uses = chapter_includes(root)
    print('| chapter | earlier chapters | common/ | kernels/ |')
    print('|---------|------------------|---------|----------|')
    for chapter in sorted(uses):
        u = uses[chapter]
        print(f"| {chapter} | {', '.join(sorted(u['chapters'])) or '—'} | {', '.join(sorted(u['common']))} | "
              f"{', '.join(sorted(u['kernels'])) or '—'} |")


if __name__ == '__main__':
    main()
