#!/usr/bin/env python3
"""Every repository path a comment or document cites must exist, and every #anchor it names must
be a heading of that Markdown file (GitHub's anchor rule). Usage: check_citations.py REPO_ROOT.
Prints the number of citations checked; exits 1 listing every broken one."""
import os, re, sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
# A citation: a path under one of the repository's top folders, optionally with #anchor.
cite = re.compile(r'(?<![\w./-])((?:docs|include|tools|tests|bench|examples|scripts|cmake|fuzz|data|python)/'
                  r'[\w./-]*[\w-])(#[\w-]+)?')
skip_dirs = {'.git', 'build', 'node_modules', '__pycache__'}
exts = ('.hpp', '.cpp', '.h', '.md', '.txt', '.cmake', '.sh', '.py', '.in', '.pyi')

def anchors(md):
    out = set()
    for line in open(md, encoding='utf-8'):
        m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
        if m:
            a = re.sub(r'[^\w\- ]', '', m.group(1).lower()).replace(' ', '-')
            out.add(a)
    return out

cache, broken, checked = {}, [], 0
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if x not in skip_dirs]
    for f in files:
        if not f.endswith(exts) and f not in ('CMakeLists.txt',):
            continue
        p = os.path.join(d, f)
        rel = os.path.relpath(p, root)
        try:
            text = open(p, encoding='utf-8').read()
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.split('\n'), 1):
            for m in cite.finditer(line):
                path, anchor = m.group(1), m.group(2)
                if any(c in path for c in '*<>{}$') or path.endswith(('/', '.')):
                    continue
                full = os.path.join(root, path)
                # paths that name build outputs or globs are not citations of sources
                if path.startswith(('build/',)):
                    continue
                # A path whose folder is not one of ours names a file of another repository
                # (a public source), not a citation of this one.
                if not os.path.isdir(os.path.dirname(full)):
                    continue
                checked += 1
                if not os.path.exists(full):
                    broken.append(f'{rel}:{n}: {path} does not exist')
                elif anchor and path.endswith('.md'):
                    if full not in cache:
                        cache[full] = anchors(full)
                    if anchor[1:] not in cache[full]:
                        broken.append(f'{rel}:{n}: {path}{anchor}: no such heading')
print(f'check_citations: {checked} citations checked, {len(broken)} broken')
for b in broken:
    print('  ' + b)
sys.exit(1 if broken else 0)
