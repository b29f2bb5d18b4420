#!/usr/bin/env bash
# tests/docs_links_test.sh — the documentation's links and code fences. For README.md,
# results/README.md and docs/*.md (or the Markdown files given as arguments):
#   - every relative link or image resolves to a file or folder inside the repository, and a
#     link with #anchor into a Markdown file names one of its headings (GitHub's slug: lower case,
#     spaces to '-', punctuation other than '-' and '_' dropped, repeats numbered -1, -2, ...) or
#     an <a id="..."> there; a bare #anchor looks in the file itself;
#   - every code fence opens with a line of ``` alone or ```word and is closed by ``` alone:
#     "``` text" does not open a fence under CommonMark, and an unclosed one swallows the page.
# Links inside code (fences, `spans`) are not links. Absolute URLs are not fetched.
# CTest runs this (Scripts.DocsLinksResolve). Exit 0 when all hold, 1 otherwise (each problem on
# a line of its own: file:line: what), 2 when it cannot run.
set -uo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${TPB_TEST_PYTHON:-python3}"
command -v "$PY" >/dev/null || { echo "docs_links_test: $PY not found" >&2; exit 2; }

if [ "$#" -eq 0 ]; then
  set -- "$SRC/README.md" "$SRC/results/README.md" "$SRC"/docs/*.md
fi

exec "$PY" - "$SRC" "$@" <<'EOF'
import os, re, sys

root = os.path.realpath(sys.argv[1])
files = [os.path.realpath(f) for f in sys.argv[2:]]
problems = []

FENCE = re.compile(r'^ {0,3}(`{3,}|~{3,})(.*)$')
LINK = re.compile(r'\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$')
HEADING = re.compile(r'^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
HTML_ID = re.compile(r'<a\s+(?:name|id)="([^"]+)"')

def slug(text):
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)  # a link in a heading: its text
    text = re.sub(r'<[^>]+>', '', text)
    text = text.strip().lower()
    text = ''.join(c for c in text if c.isalnum() or c in ' -_')
    return text.replace(' ', '-')

def scan(path):
    """(lines outside code with their numbers, anchors, fence problems) of one file."""
    text = open(path, encoding='utf-8').read().split('\n')
    prose, anchors, bad = [], set(), []
    seen = {}
    fence = None  # (marker, line number) while inside a fence
    for no, line in enumerate(text, 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0][0] and len(m.group(1)) >= len(fence[0]):
                if m.group(2).strip():
                    bad.append((no, 'a fence closes with %s alone, not %r' % (fence[0], line.strip())))
                fence = None
            continue
        if m:
            info = m.group(2).strip()
            if m.group(1)[0] == '`' and not re.fullmatch(r'[A-Za-z0-9_+-]*', info):
                bad.append((no, 'a fence opens with ``` alone or ```word, not %r' % line.strip()))
                continue  # CommonMark: not a fence at all
            fence = (m.group(1), no)
            continue
        h = HEADING.match(line)
        if h:
            s = slug(h.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            anchors.add(s if n == 0 else '%s-%d' % (s, n))
        for a in HTML_ID.findall(line):
            anchors.add(a)
        prose.append((no, re.sub(r'`+[^`]*`+', 'code', line)))
    if fence:
        bad.append((fence[1], 'this fence is never closed'))
    return prose, anchors, bad

cache = {}
def info(path):
    if path not in cache:
        cache[path] = scan(path)
    return cache[path]

for f in files:
    rel = os.path.relpath(f, root)
    if not os.path.isfile(f):
        problems.append('%s: no such file' % rel)
        continue
    prose, anchors, bad = info(f)
    for no, what in bad:
        problems.append('%s:%d: %s' % (rel, no, what))
    for no, line in prose:
        targets = LINK.findall(line)
        r = REFDEF.match(line)
        if r:
            targets.append(r.group(1))
        for t in targets:
            if re.match(r'^[A-Za-z][A-Za-z0-9+.-]*:', t):
                continue  # http:, https:, mailto: ...
            path, _, anchor = t.partition('#')
            target = os.path.realpath(os.path.join(os.path.dirname(f), path)) if path else f
            if path and target != root and not target.startswith(root + os.sep):
                problems.append('%s:%d: %s leaves the repository' % (rel, no, t))
                continue
            if not os.path.exists(target):
                problems.append('%s:%d: %s: no such file or folder' % (rel, no, t))
                continue
            if anchor and target.endswith('.md') and os.path.isfile(target):
                if anchor not in info(target)[1]:
                    problems.append('%s:%d: %s: no heading of %s has the anchor #%s'
                                    % (rel, no, t, os.path.relpath(target, root), anchor))

for p in problems:
    print(p)
print('docs_links_test: %d file(s), %s' % (len(files), '%d problem(s)' % len(problems) if problems else 'every link resolves, every fence is sound'))
sys.exit(1 if problems else 0)
EOF
