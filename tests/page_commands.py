"""The shell commands the pages give a reader, with the page and line each is written on.

A page is any Markdown file of the repository's own (the root, one folder down, the curriculum),
not the generated results under curriculum/results/. A command is
- each line of a ```bash (or sh, shell, console) block, `\\`-continued lines joined, a console's
  `$ ` prompt removed, a trailing `# comment` kept apart;
- an inline code span that starts like a command: `make ...`, `python -m ...`,
  `.venv/bin/python -m ...` (a span may wrap onto the next line).
An inline span that only names a target or a module (`make train`, `python -m tools.exercises`)
is a *mention*: prose talking about the command, not a command line to type.

A fence without a language whose lines start like commands (`make ...`, `python ...`) is reported
too: label it ```bash when it holds commands, ```text when it shows a synopsis or an output.
"""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
NOT_PAGES = {"tests", "workspace", "runs"}  # folders whose Markdown is no page of the course
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
STARTS_LIKE_A_COMMAND = re.compile(r"^(make\b|python3? -m |(\.\./)?\.venv/bin/python3? -m )")
INLINE_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")


@dataclass(frozen=True)
class Command:
    page: str  # relative to the repository root
    line: int  # 1-based, where the command starts
    text: str  # the command as written, comment and prompt removed, continuations joined
    inline: bool  # an inline span in the prose (else a line of a shell block)
    comment: str = ""  # a block line's trailing `# comment`, without the `#`

    @property
    def mention(self):
        """An inline span that names a target or module, with no argument: `make train`."""
        words = self.text.split()
        if not self.inline:
            return False
        if words[0] == "make":
            return len(words) == 2
        return all(not word.startswith("-") for word in words[words.index("-m") + 2 :])

    @property
    def where(self):
        return f"{self.page}:{self.line}: `{self.text}`"


def pages(root=ROOT):
    """Every page: the root's Markdown, one folder down (not tests/, workspace/, hidden ones)."""
    found = sorted(root.glob("*.md")) + sorted(root.glob("*/*.md"))
    return [
        path
        for path in found
        if path.parent == root
        or (path.parent.name not in NOT_PAGES and not path.parent.name.startswith("."))
    ]


def split_comment(line):
    """(command, comment): `line` split at a `#` that starts a shell comment (outside quotes,
    after a blank)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip(), line[i + 1 :].strip()
    return line.strip(), ""


def block_commands(lines, first_line, language):
    """(line number, command, comment) of each command of a shell block's `lines`."""
    commands, pending, start = [], "", None
    for number, line in enumerate(lines, first_line):
        text = line.strip()
        if language == "console":
            if not text.startswith("$ "):
                continue  # output, not a command
            text = text[2:]
        if start is None:
            start = number
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        command, comment = split_comment(pending + text)
        if command:
            commands.append((start, " ".join(command.split()), comment))
        pending, start = "", None
    return commands


def scan(path, root=ROOT):
    """(commands, unlabeled): the page's commands, and the lines of its unlabeled fences that
    start like a command, as (line number, text)."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text().splitlines()
    commands, unlabeled, prose = [], [], []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        fence, language = opened.groups()
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence)), len(lines)
        )
        body = lines[i + 1 : end]
        if language.lower() in SHELL_LANGUAGES:
            for number, text, comment in block_commands(body, i + 2, language.lower()):
                commands.append(Command(page, number, text, inline=False, comment=comment))
        elif not language:
            unlabeled += [
                (number, text.strip())
                for number, text in enumerate(body, i + 2)
                if STARTS_LIKE_A_COMMAND.match(text.strip())
            ]
        prose.append((i + 1, ""))  # a fence ends a paragraph: no span crosses it
        i = end + 1
    commands += inline_commands(page, prose)
    return sorted(commands, key=lambda command: command.line), unlabeled


def inline_commands(page, prose):
    """The commands written as inline code spans in `prose`, (line number, text) pairs."""
    text = "\n".join(line for _, line in prose)
    starts = [0]
    for _, line in prose:
        starts.append(starts[-1] + len(line) + 1)
    found = []
    for span in INLINE_SPAN.finditer(text):
        command = " ".join(span.group(1).split())
        if STARTS_LIKE_A_COMMAND.match(command) or command == "make":
            index = next(k for k, start in enumerate(starts) if start > span.start()) - 1
            found.append(Command(page, prose[index][0], command, inline=True))
    return found


def all_commands(root=ROOT):
    """Every command of every page, in page order."""
    return [command for path in pages(root) for command in scan(path, root)[0]]


def all_unlabeled(root=ROOT):
    """(page, line, text) of every unlabeled fence line that starts like a command."""
    return [
        (path.relative_to(root).as_posix(), number, text)
        for path in pages(root)
        for number, text in scan(path, root)[1]
    ]


if __name__ == "__main__":  # the list, for a reader checking what the test sees
    for command in all_commands():
        print(f"{'inline' if command.inline else 'block '} {command.where}")
    for page, number, text in all_unlabeled():
        print(f"UNLABELED {page}:{number}: {text}")
