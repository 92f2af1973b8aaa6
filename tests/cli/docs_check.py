#!/usr/bin/env python3
"""Holds the user documentation to the one option table (programs/imgstat/options.c).

Usage: docs_check.py OPT_DUMP_OUTPUT SOURCE_DIR

For every option of the statistics command and of normalize (the table as
tests/cli/opt_dump.c prints it):
  * the man page (docs/imgstat.1) names it: the statistics options each in
    their own paragraph of OPTIONS, normalize's in SUBCOMMANDS;
  * the README's option table of its command has a row for it;
  * where the option takes one of a list of words, every word is in the man
    page's paragraph and the README's row;
  * where --help states a default, the man paragraph and the README row say
    "default" with the same value.
And no user document names an issue number or a sibling checkout's path.
Prints one line per failure; exits 1 when there is one.
"""
import re
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def man_text(src):
    """The man page as plain text, one string per .TP paragraph."""
    raw = open(src + "/docs/imgstat.1", encoding="utf-8").read()
    t = raw.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
    t = re.sub(r"\\f[BIRP]", "", t)
    sections = {}
    cur = None
    for line in t.split("\n"):
        m = re.match(r"\.SH\s+\"?([^\"]*)\"?", line)
        if m:
            cur = m.group(1).strip()
            sections[cur] = []
            continue
        if cur is not None:
            sections[cur].append(line)

    def paragraphs(lines):
        paras, p = [], []
        for line in lines:
            if line.startswith(".TP") or line.startswith(".SH"):
                if p:
                    paras.append(p)
                p = []
                continue
            p.append(line)
        if p:
            paras.append(p)
        out = []
        for p in paras:
            text = []
            for line in p:
                # macro lines: keep their words, drop quotes
                line = re.sub(r"^\.(B|I|BI|BR|IB|RB|IR|RI)\s+", "", line)
                line = line.replace('"', "")
                if line.startswith("."):
                    continue
                text.append(line)
            out.append("\n".join(text))
        return out

    return {k: paragraphs(v) for k, v in sections.items()}


def readme_rows(src):
    """The README's option-table rows, per table: {header cell: [rows]}."""
    t = open(src + "/README.md", encoding="utf-8").read()
    tables = {}
    head = None
    for line in t.split("\n"):
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if head is None:
                head = cells[0]
                tables[head] = []
            elif not set(cells[0]) <= set("-: "):
                # (the first cell, the whole row), with \| as |
                tables[head].append((cells[0].replace("\\|", "|"),
                                     line.replace("\\|", "|")))
        else:
            head = None
    return tables


VALUE = r"[0-9][0-9A-Za-z^.,]*[0-9A-Za-z]|[0-9]|[a-z]+"
SKIP_WORDS = {"the", "from", "a", "an", "one", "all", "when", "for"}


def help_default(help_text, words):
    """The default --help states, or None."""
    h = " ".join(help_text.replace("\\n", " ").split())
    m = re.search(r"\(default:? (%s)[:;,) ]" % VALUE, h)
    if m and m.group(1) not in SKIP_WORDS and \
            (not words or m.group(1) in words):
        return m.group(1)
    for w in words:
        if re.search(r"(^|[ (])%s( \([^)]*?)?[ (;]*\(?default(\)|: (?!from))"
                     % re.escape(w), h) or \
                re.search(r"(^|[ (])%s \([^)]*; default\)" % re.escape(w), h) \
                or re.search(r"(^|[ (])%s: [^,;()]* \(default\)"
                             % re.escape(w), h):
            return w
    return None


def says_default(text, value):
    t = " ".join(text.split())
    pat = r"default[^.;]{0,40}?(?<![0-9A-Za-z])%s(?![0-9A-Za-z])|" \
          r"(?<![0-9A-Za-z])%s(?![0-9A-Za-z])[^.;]{0,50}?default" % (
              re.escape(value), re.escape(value))
    return re.search(pat, t) is not None


def names_option(text, name):
    return re.search(r"(?<![-\w])%s(?![-\w])" % re.escape(name), text)


def main():
    dump, src = sys.argv[1], sys.argv[2]
    rows = []
    for line in open(dump, encoding="utf-8"):
        cmd, name, short, takes, words, help_text = \
            line.rstrip("\n").split("\t")
        rows.append((cmd, name, short, takes == "1",
                     [] if words == "-" else words.split(","), help_text))
    man = man_text(src)
    readme = readme_rows(src)
    stats_table = readme.get("option", [])
    norm_table = readme.get("normalize option", [])
    if not stats_table:
        fail("README.md has no table whose first column is 'option'")
    if not norm_table:
        fail("README.md has no table whose first column is 'normalize option'")
    sub = "\n".join(man.get("SUBCOMMANDS", []))
    for cmd, name, short, takes, words, help_text in rows:
        if cmd == "stats":
            paras = [p for p in man.get("OPTIONS", [])
                     if names_option(p.split("\n")[0], name)]
            man_para = "\n".join(paras)
            if not paras:
                fail("man page: no paragraph for %s in OPTIONS" % name)
            table = stats_table
        else:
            man_para = sub
            if not names_option(sub, name):
                fail("man page: normalize's %s not in SUBCOMMANDS" % name)
            table = norm_table
        # the README row: the option in its first cell
        mine_first = [first for first, r in table
                      if names_option(first, name) or
                      (short != "-" and names_option(first, short))]
        mine = [r for first, r in table
                if names_option(first, name) or
                (short != "-" and names_option(first, short))]
        where = "README's %s table" % ("normalize option" if cmd != "stats"
                                       else "option")
        if not mine:
            fail("%s: no row for %s" % (where, name))
        row = "\n".join(mine)
        # the value words where the option is named: the man paragraph's
        # tag line, the README row's first cell (as "--as keep|gray|...")
        heads = "\n".join(p.split("\n")[0] for p in paras) \
            if cmd == "stats" else sub
        for w in words:
            wre = r"(?<![\w-])%s(?![\w-])" % re.escape(w)
            if cmd == "stats" and paras and not re.search(wre, heads):
                fail("man page: %s's value word '%s' missing from its tag"
                     % (name, w))
            if mine and not re.search(wre, "\n".join(mine_first)):
                fail("%s: %s's value word '%s' missing from its first cell"
                     % (where, name, w))
        d = help_default(help_text, words)
        if d is not None:
            if cmd == "stats" and paras and not says_default(man_para, d):
                fail("man page: %s's default %s not said (--help: default %s)"
                     % (name, d, d))
            if mine and not says_default(row, d):
                fail("%s: %s's default %s not said (--help: default %s)"
                     % (where, name, d, d))
    # no issue numbers or sibling-folder paths in user documentation
    import glob
    docs = [src + "/README.md", src + "/docs/imgstat.1"] + \
        sorted(glob.glob(src + "/docs/*.md"))
    for path in docs:
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            if re.search(r"\bissues? #?[0-9]+|\.\./shared", line):
                fail("%s:%d: an issue number or ../shared path: %s"
                     % (path[len(src) + 1:], n, line.strip()[:100]))
    print("docs_check: %d options, %d failures" % (len(rows), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
