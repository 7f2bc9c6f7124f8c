#!/usr/bin/env python3
"""Checks that the documentation cites only what is in the repository.

- Every relative Markdown link in a tracked `.md` file resolves to a file
  or directory of the repository, and a `#anchor` on a Markdown target
  names one of its headings (GitHub's slugs) or an explicit `<a id>`.
- Every citation of a docs/PROTOCOL.md section in tracked files (the
  file's path, a comma, then the section's title) names one of its
  headings: the code cites the protocol by title.
- No tracked file refers to the shared folder beside the repository.

Exits 1 and prints each problem as `file:line: problem`.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ANCHOR = re.compile(r'<a id="([^"]+)"')
PROTOCOL_REF = re.compile(r"docs/PROTOCOL\.md, (.*)")
OUTSIDE = "../" + "shared"
COMMENT_MARK = re.compile(r"^(//[/!]?|#)\s*")


def tracked_files():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if os.path.isfile(os.path.join(ROOT, f))]


def slug(title):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    title = re.sub(r"`", "", title).strip().lower()
    title = re.sub(r"[^\w\- ]", "", title)
    return title.replace(" ", "-")


def headings(path):
    titles, anchors, fenced = [], set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
                continue
            anchors.update(EXPLICIT_ANCHOR.findall(line))
            m = None if fenced else HEADING.match(line)
            if m:
                titles.append(m.group(2))
                anchors.add(slug(m.group(2)))
    return titles, anchors


def main():
    problems = []
    files = tracked_files()
    anchors_of = {}

    def anchors(path):
        if path not in anchors_of:
            anchors_of[path] = headings(path)[1]
        return anchors_of[path]

    for rel in files:
        if not rel.endswith(".md"):
            continue
        path = os.path.join(ROOT, rel)
        fenced = False
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.startswith("```"):
                    fenced = not fenced
                if fenced:
                    continue
                for target in LINK.findall(line):
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                        continue  # https:, mailto:
                    file_part, _, anchor = target.partition("#")
                    resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                    if not resolved.startswith(ROOT + os.sep) and resolved != ROOT:
                        problems.append(f"{rel}:{number}: link {target} leaves the repository")
                    elif not os.path.exists(resolved):
                        problems.append(f"{rel}:{number}: link {target} does not resolve")
                    elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                        problems.append(f"{rel}:{number}: link {target}: no such heading")

    protocol = os.path.join(ROOT, "docs", "PROTOCOL.md")
    titles = sorted(headings(protocol)[0], key=len, reverse=True)
    for rel in files:
        if rel.startswith("target/"):
            continue
        try:
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                lines = f.readlines()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, 1):
            if OUTSIDE in line and rel != "ci/doc-links.py":
                problems.append(f"{rel}:{number}: refers to a path outside the repository")
            for cited in PROTOCOL_REF.findall(line):
                # A citation wrapped over two comment lines reads on.
                following = lines[number].strip() if number < len(lines) else ""
                cited = cited.rstrip() + " " + COMMENT_MARK.sub("", following)
                if not any(cited.startswith(t) for t in titles):
                    problems.append(f"{rel}:{number}: docs/PROTOCOL.md has no section {cited.strip()!r}")

    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"links and citations resolve ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
