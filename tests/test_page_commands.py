"""Every command on every page works as written (issue 13, item 7).

tests/page_commands.py extracts the commands of every page (README.md, ARCHITECTURE.md, the
curriculum, the packages' READMEs); each is one test, named by its page and line. Every command is
checked: its make targets exist and `make -n` accepts its variables, the Python command lines it
runs (written on the page, or in the recipe `make -n` prints) parse with their modules' own parsers
(tests/parse_only.py), and the repository files it names exist. Then CLASSES says, per pattern,
whether it is also run for real, or why not (a GPU, the network, minutes of work, files it would
rewrite). A command no row matches fails: classify it, never skip it silently.

Commands run in a copy of the checkout (links to its files) holding a copy of the fresh workspace/
that `make exercises` writes (conftest.py's, made once per run; the page's `make exercises` itself
runs in a checkout of its own), so a command that takes the learner's tier (`make grade STAGE=1`,
no `IMPL=`) grades the stubs: it must end with the grader's summary, or stop at a stub naming its
week and task, never with a traceback or a usage error. `IMPL=` commands run the reference. A
command whose comment quotes a figure (`# 61,706 parameters`) is also run on the reference, whose
output must show it.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from made_once import copy_workspace

from datasets.errors import DatasetError
from datasets.sources import locate
from tests.page_commands import ROOT, all_commands, all_unlabeled

RUN = "run"  # run for real, then judged
CHECK = "check"  # checked (targets, arguments, files), not run: the reason says why

# (pattern over the command as written, what is done, why): the first row that matches decides.
GPU = (r"\bnvcc\b|\bnsys\b|\bncu\b|nvidia-smi|compute-sanitizer|^make sanitize\b|grader\.sanitize"
       r"|^make (race|speedrun)\b|-m bench\.(race|speedrun)\b|--graph\b"
       r"|^make (train|bench) STAGE=4\b"  # the simulator refuses these two
       r"|-m (nn\.train|bench\.epoch) --stage 4\b"
       r"|\bbench\.(softmax_ladder|conv_ladder|memory_bound|host_pipeline|data_parallel"
       r"|data_parallel_follow)\b")
REFERENCE_TRAINING = (
    r"--stage 4\b.*--data|(^make train\b.*\bIMPL=(\s|$)|-m nn\.train\b(?!.*--impl))"
    r".*--data (fashion-)?mnist"
)
CLASSES = [
    (GPU, CHECK, "needs an NVIDIA GPU or the CUDA toolkit"),
    (r"\bpip (install|download)\b|\bapt-get\b|^make data\b|datasets fetch\b", CHECK,
     "downloads from the network (make data: the sets it does not find)"),
    (r"^make (bench|results)\b|bench_matmul|grader bench\b"
     r"|bench\.(ops_vs_pytorch|epoch|inference|int8)\b", CHECK,
     "benchmarks for minutes (make results also rewrites curriculum/results/)"),
    (r"^make portability\b", CHECK, "the whole suite on three C builds at two thread counts"),
    (r"^make asan\b", CHECK, "rebuilds the C tier every other test loads, with ASan, for minutes"),
    (r"^make notebooks\b", CHECK, "executes every notebook (minutes; the notebook tests run them)"),
    (r"^make (setup|build)\b|stage3_c\.build\b|nvcc_build\b|tiers build\b", CHECK,
     "rebuilds the C tier in the checkout every other test loads"),
    (r"^make clean\b", CHECK,
     "deletes the build outputs the other tests load (test_makefile runs it in a copy)"),
    (r"^make test\b|-m pytest\b|^pytest\b", CHECK,
     "runs the test suite from inside it; test_weeks.py checks each -m weekNN a page cites"),
    (r"-m (nn\.(predict|evaluate|export|import_onnx|quantize|explain)|bench\.(onnx_parity|explain))"
     r"\b|^make export\b",
     CHECK,
     "needs a checkpoint trained by make train (runs/...), or its export"),
    (r"^make serve\b|-m (nn\.serve|bench\.(serve_load|preprocess))\b", CHECK,
     "serves a checkpoint trained by make train until stopped (tests/test_serve*.py start it)"),
    (r"\btensorboard --logdir\b", CHECK,
     "serves the dashboard until stopped (tests/test_dashboard.py reads what the trainer writes)"),
    (r"^\$EDITOR\b|^git\b|-m cProfile\b|^jupyter\b", CHECK,
     "an editor, git, a profiler or Jupyter (interactive): the files it names are checked"),
    (r"^make exercises-index\b|tools\.exercise_index\b", CHECK,
     "rewrites the tracked EXERCISES.md (test_exercise_index.py checks it is current)"),
    (r"--data tiny-imagenet\b", CHECK,
     "trains on Tiny ImageNet: 1.2 GB of images to load, an hour or more even on a GPU"),
    (REFERENCE_TRAINING, CHECK, "trains the reference on (Fashion-)MNIST: minutes"),
    (r"^make grade\b.*\bIMPL=(\s|$)", CHECK, "grades every reference op with timings (over a "
     "minute); test_weeks.py and test_grader_cli.py grade the reference"),
    (r"^make( (grade|train|exercises|lint|progress)\b|$)", RUN, "seconds"),
    (r"-m (tiers|datasets (list|info|verify)|nn\.(train|draw)|tools\.exercises)\b"
     r"|^python3? -c ", RUN, "seconds"),
]  # fmt: skip
FIGURE = re.compile(r"\b\d{1,3}(?:,\d{3})+\b")  # 61,706: a count a page quotes from an output
PLACEHOLDER = re.compile(r"\[|\.\.\.|\b(N|K|M|V|DIR|NAME|FILE|FLAGS|PATH)\b")
MAKE_OPTIONS = ["-o", "setup", "-o", "build", "-o", ".venv/.installed", "--no-print-directory"]
OUTPUT_OPTIONS = {"-o", "--out", "--output", "--json", "--run-dir", "--results", "-d", "--target"}
DATA_SETS = ("tiny-imagenet", "fashion-mnist", "mnist")  # "mnist" is in "fashion-mnist": last
RUN_SECONDS = 120
WORKERS = min(4, len(os.sched_getaffinity(0)))  # commands run at once
COMMANDS = all_commands()


def classify(command):
    """(what, why) for `command`: a mention or synopsis is checked only; else the table's row."""
    if command.mention:
        return CHECK, "a target or module named in prose: it must exist"
    if PLACEHOLDER.search(command.text):
        return CHECK, "a synopsis with placeholders: its targets and module must exist"
    for pattern, what, why in CLASSES:
        if re.search(pattern, command.text):
            return what, why
    return None, None


def parts(text):
    """The simple commands of `text` (split at `&&`), each a list of words."""
    words = shlex.split(text)
    split = [[]]
    for word in words:
        if word == "&&":
            split.append([])
        else:
            split[-1].append(word)
    return [part for part in split if part]


def python_calls(words):
    """(module, arguments) of a `[VAR=value ...] python -m module ...` command line, else None."""
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        words = words[1:]
    if not re.search(r"(^|/)python3?$", words[0]) or "-m" not in words[:-1]:
        return None
    start = words.index("-m")
    arguments = []
    for word in words[start + 2 :]:
        if word in {"||", "|", ";"} or word[0] in "<>" or word.startswith("2>"):
            break
        arguments.append(word)
    return words[start + 1], arguments


def project_module(module):
    return (ROOT / module.split(".")[0] / "__init__.py").exists()


def make_targets():
    return set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))


def tree_for(tmp_path_factory, workspace=None):
    """A copy of the checkout (links to its files) without runs/, and with `workspace` as its
    workspace/ (None: without one)."""
    tree = tmp_path_factory.mktemp("checkout")
    for entry in ROOT.iterdir():
        if entry.name not in {"workspace", "runs", ".git"} and not entry.name.endswith("cache"):
            (tree / entry.name).symlink_to(entry)
    if workspace:
        (tree / "workspace").symlink_to(workspace)
    return tree


def as_run(words):
    """`words` as run here: make skips its setup step (the venv and the C build are ready), and
    `python` is this interpreter (the venv's, whether or not the shell has it activated)."""
    if words[0] == "make":
        return [words[0], *MAKE_OPTIONS, *words[1:]]
    return [sys.executable if re.fullmatch(r"python3?", word) else word for word in words]


def run_in(tree, text):
    """(exit status, output) of `text` run by the shell in `tree`; past RUN_SECONDS, (None, the
    output so far)."""
    line = " && ".join(shlex.join(as_run(words)) for words in parts(text))
    env = os.environ | {"NUMBA_ENABLE_CUDASIM": "1"}
    process = subprocess.Popen(
        line, shell=True, cwd=tree, env=env, text=True, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        output, _ = process.communicate(timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the shell, make and the Python under it
        output, _ = process.communicate()
        return None, output
    return process.returncode, output


@pytest.fixture(scope="module")
def tree(exercise_workspace, tmp_path_factory):
    """A checkout with a fresh workspace/ as `make exercises` writes it (a copy of the run's, which
    the commands may change)."""
    workspace = copy_workspace(exercise_workspace, tmp_path_factory.mktemp("workspace") / "copy")
    return tree_for(tmp_path_factory, workspace)


def shallow(command):
    """True for a mention or a synopsis: only its targets and module must exist."""
    return command.mention or bool(PLACEHOLDER.search(command.text))


@pytest.fixture(scope="module")
def checked(tree):
    """{(text, shallow): the problems found without running it} for every command."""
    targets = make_targets()
    findings, calls = {}, set()
    for key in sorted({(command.text, shallow(command)) for command in COMMANDS}):
        text, only_names = key
        problems, found = [], []
        for words in parts(text):
            if words[0] == "make" and only_names:
                problems += unknown_targets(words, targets)
            elif words[0] == "make":
                problems += check_make(tree, words, targets, found)
            elif call := python_calls(words):
                found.append((call[0], None if only_names else call[1]))
            if not only_names:
                problems += missing_files(tree, words)
        # a module of another project (pip, pytest) is only imported: its main would run
        found = [
            (module, tuple(arguments) if arguments is not None and project_module(module) else None)
            for module, arguments in found
        ]
        findings[key] = (problems, found)
        calls |= set(found)
    messages = parse_all(tree, sorted(calls, key=str))
    for problems, found in findings.values():
        for module, arguments in found:
            if message := messages[module, arguments]:
                command = shlex.join([module, *(arguments or ())])
                problems.append(f"`python -m {command}`: {message}")
    return {key: problems for key, (problems, _) in findings.items()}


def unknown_targets(words, targets):
    named = [word for word in words[1:] if "=" not in word and not word.startswith("-")]
    unknown = [target for target in named if target not in targets]
    return [f"the Makefile has no target {', '.join(unknown)}"] if unknown else []


def check_make(tree, words, targets, found):
    """Problems of one `make ...` command: unknown targets, or a `make -n` that fails. The
    Python calls of its recipe are added to `found`."""
    unknown = unknown_targets(words, targets)
    if unknown:
        return unknown
    done = subprocess.run(
        ["make", "-n", *MAKE_OPTIONS, *words[1:]], cwd=tree, capture_output=True, text=True
    )
    if done.returncode:
        return [f"make -n fails: {done.stderr.strip()}"]
    recipe = re.sub(r"\\\n\s*", " ", done.stdout)
    for line in re.findall(r"\S*python3? -m [^;\n]*", recipe):
        if "$" not in line:  # a shell variable: its value is known only when the recipe runs
            found.append(python_calls(shlex.split(line)))
    return []


def missing_files(tree, words):
    """The repository paths among `words` that do not exist (outputs excepted)."""
    tops = {entry.name for entry in tree.iterdir()}
    missing = []
    for before, word in zip(["", *words], words, strict=False):
        path = word.split("=", 1)[-1]
        if before in OUTPUT_OPTIONS or "*" in path or path.split("/")[0] not in tops:
            continue
        if not (tree / path).exists():
            missing.append(f"no file {path}")
    return missing


def parse_all(tree, calls):
    """{(module, arguments): the parse error or ""} for every call, in one process."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "parse_only.py")],
        input=json.dumps([[module, arguments] for module, arguments in calls]),
        cwd=tree,
        env=os.environ | {"NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    return dict(zip(calls, json.loads(done.stdout.splitlines()[-1]), strict=True))


def data_missing(text):
    """The data set `text` trains on or describes, when no source holds it; else None."""
    name = next((name for name in DATA_SETS if re.search(rf"\b{name}\b", text)), None)
    if name is None:
        return None
    try:
        locate(name)
    except DatasetError:
        return name
    return None


def judge(status, output):
    """Why a run on the fresh workspace or the reference went wrong, or None."""
    if status is None:
        return f"still running after {RUN_SECONDS} s"
    if "Traceback (most recent call last)" in output:
        return "a traceback"
    if status == 0:
        return None
    failed = [line for line in output.splitlines() if line.strip().startswith("FAILED")]
    stub = "not implemented" in output
    if stub and all("not implemented" in line for line in failed):
        return None  # it stopped at (or graded) the learner's stubs, naming week and task
    return f"exit {status}"


@pytest.fixture(scope="module")
def runs(tree, tmp_path_factory):
    """{text: (exit status, output)} of every command to run, a few at a time; also
    {("reference", text): ...} for those whose comment quotes a figure."""
    chosen = [c for c in COMMANDS if classify(c)[0] == RUN and not data_missing(c.text)]
    keys = sorted({command.text for command in chosen})
    keys += sorted({("reference", c.text) for c in chosen if FIGURE.search(c.comment)})

    def run(key):
        # each in a checkout of its own (its own runs/), sharing the fresh workspace; `make
        # exercises` writes one, so it gets a checkout without
        text = on_the_reference(key[1]) if isinstance(key, tuple) else key
        workspace = None if "exercises" in text else tree / "workspace"
        return run_in(tree_for(tmp_path_factory, workspace), text)

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(keys, pool.map(run, keys), strict=True))


def on_the_reference(text):
    """`text` taking the repository's tiers: make gets `IMPL=` (python -m takes them already)."""
    if text.startswith("make ") and not re.search(r"\bIMPL=", text):
        return text + " IMPL="
    return text


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("command", COMMANDS, ids=[command.where for command in COMMANDS])
def test_page_command(command, checked, runs):
    what, why = classify(command)
    assert what, f"{command.where}: no row of CLASSES (test_page_commands.py) matches it"
    problems = checked[command.text, shallow(command)]
    assert not problems, f"{command.where}: " + "; ".join(problems)
    if what == CHECK:
        return
    missing = data_missing(command.text)
    if missing:
        pytest.skip(f"{missing} not found (make data, or NN_DATA_DIR): {command.where} not run")
    status, output = runs[command.text]
    problem = judge(status, output)
    assert problem is None, f"{command.where} ({why}): {problem}\n{output[-3000:]}"
    figures = FIGURE.findall(command.comment)
    if figures:
        status, output = runs["reference", command.text]
        assert status == 0, f"{command.where}, on the reference: exit {status}\n{output[-3000:]}"
        unseen = [figure for figure in figures if figure not in output]
        assert not unseen, f"{command.where}: the comment says {unseen}; the output:\n{output}"


def test_the_pages_give_commands_of_every_kind():
    """The extractor sees blocks and inline spans, make and python, on the pages that have them."""
    texts = {(command.page, command.text, command.inline) for command in COMMANDS}
    assert ("curriculum/week01.md", "make grade STAGE=1 WEEK=1", False) in texts
    assert ("README.md", ".venv/bin/python -m datasets list", False) in texts
    assert any(page == "ARCHITECTURE.md" and inline for page, _, inline in texts)
    assert len(COMMANDS) > 150


def test_no_command_hides_in_an_unlabeled_fence():
    """A fence holding commands is ```bash (checked here); a synopsis or output is ```text."""
    assert all_unlabeled() == [], "label these fences bash (commands) or text (not commands)"


def test_a_drifted_command_is_reported_with_page_and_line(tmp_path):
    """A target the Makefile lacks, an ARGS a module refuses (through `make -n`), a flag a module
    refuses: each is a problem, named with the page's line."""
    from tests.page_commands import scan

    page = tmp_path / "drift.md"
    page.write_text(
        "Intro.\n\n```bash\nmake gradee STAGE=1\nmake train ARGS='--model lenet6'\n```\n"
        "Then `python -m nn.train --model xor --epoks 3`.\n"
    )
    commands, _ = scan(page, tmp_path)
    assert [command.where for command in commands] == [
        "drift.md:4: `make gradee STAGE=1`",
        "drift.md:5: `make train ARGS='--model lenet6'`",
        "drift.md:7: `python -m nn.train --model xor --epoks 3`",
    ]
    targets, found = make_targets(), []
    assert check_make(ROOT, parts(commands[0].text)[0], targets, found) == [
        "the Makefile has no target gradee"
    ]
    assert check_make(ROOT, parts(commands[1].text)[0], targets, found) == []
    found = [(module, tuple(arguments)) for module, arguments in found]
    train = next(call for call in found if call[0] == "nn.train")  # after the recipe's build
    misspelt = ("nn.train", ("--model", "xor", "--epoks", "3"))
    answers = parse_all(ROOT, [*found, misspelt])
    assert "argument --model: invalid choice: 'lenet6'" in answers[train]
    assert "unrecognized arguments: --epoks" in answers[misspelt]


def test_a_run_passes_when_it_ends_well_or_stops_at_a_stub():
    stub = "error: week 4, task xavier_uniform: not implemented yet (stage1_python/init.py)"
    graded = "  FAILED add correct: add: not implemented (week 1, task add)\n0 passed, 1 failed"
    assert judge(0, "test_accuracy=1.0000") is None
    assert judge(2, stub) is None
    assert judge(2, graded) is None
    assert judge(2, graded + "\n  FAILED import import: stage 4: importing it failed") == "exit 2"
    assert judge(2, "usage: python -m nn.train ... error: argument --model") == "exit 2"
    assert judge(0, "Traceback (most recent call last):\n  ...") == "a traceback"
    assert judge(None, "epoch 1/100") == f"still running after {RUN_SECONDS} s"


def test_a_run_past_its_limit_is_stopped_whole(tmp_path, monkeypatch):
    """The shell and what it started are killed: the test goes on, saying the run did not end."""
    monkeypatch.setattr(sys.modules[__name__], "RUN_SECONDS", 1)
    sleeper = "python -c 'import time; print(1, flush=True); time.sleep(60)'"
    status, output = run_in(tmp_path, sleeper)
    assert (status, output) == (None, "1\n")
