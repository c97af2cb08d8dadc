"""The network's exercises (weeks 9 and 10), graded on the learner's nn/ like every other week.

`make test ARGS='-m week09'` runs week 9's checks here on the nn/ of the folder S2C_IMPL names
(`make test` sets it by the rule of `make grade`: workspace/ when it exists, `IMPL=dir`, or `IMPL=`
for the reference); a folder without nn/ is graded on the reference's. Each check runs in a child
process with S2C_NN naming that folder (tests/nn_exercise_checks.py says what each one checks), so
the learner's `nn` is imported there and a crash or a hang fails one check. The training checks
end in XOR, MLP and LeNet-5 checkpoints trained on the learner's own tiers (S2C_IMPL's stage 1 and
2). Below them: a fresh workspace reports each exercise by its week and task, and planted bugs in
a copy of the reference fail with a message that says what is wrong.
"""

import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nn_exercise_checks import CHECKS, NOT_IMPLEMENTED, PASSED, SKIPPED

ROOT = Path(__file__).resolve().parent.parent
CHECKER = Path(__file__).with_name("nn_exercise_checks.py")
IMPL = os.environ.get("S2C_IMPL") or None
SEED = secrets.randbits(31)
TRAINING_SECONDS, CHECK_SECONDS = 600, 120  # generous: the machine may be shared


def network_folder(folder):
    """`folder` (absolute) when it holds nn/, else None (the reference's nn)."""
    if folder and (Path(folder) / "nn" / "__init__.py").is_file():
        return str(Path(folder).resolve())
    return None


def run_check(name, network, impl=None, seed=SEED):
    """(exit status, last line) of check `name` on the nn/ of folder `network` (None: the
    reference's), training on `impl`'s tiers where it holds them."""
    takes = CHECKS[name][3]
    arguments = [name, str(seed)] + ([str(Path(impl).resolve())] if impl and takes else [])
    environment = os.environ | {"PYTHONPATH": str(ROOT), "S2C_NN": network or "",
                                "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run(
        [sys.executable, str(CHECKER), *arguments], cwd=ROOT, env=environment,
        capture_output=True, text=True,
        timeout=TRAINING_SECONDS if takes == "impl" else CHECK_SECONDS,
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode, lines[-1] if lines else "(no output)"


def check_cases():
    return [pytest.param(name, marks=getattr(pytest.mark, f"week{week:02d}"), id=name)
            for name, (week, *_rest) in CHECKS.items()]


@pytest.mark.parametrize("name", check_cases())
def test_network_exercise(name):
    network = network_folder(IMPL)
    status, message = run_check(name, network, IMPL)
    where = f"nn/ of {network}" if network else "the reference nn/"
    if status == SKIPPED:
        pytest.skip(message)
    assert status == PASSED, f"{where}, seed {SEED}: {message}"


# A fresh workspace: every exercise is reported by its own week and task ------------------------
@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A workspace holding only the network, written by the tool as `make exercises` does."""
    out = tmp_path_factory.mktemp("nn-exercises") / "workspace"
    subprocess.run([sys.executable, "-m", "tools.exercises", "--out", str(out), "--tiers", "nn"],
                   cwd=ROOT, check=True, capture_output=True)
    return out


@pytest.mark.parametrize("name", [name for name, check in CHECKS.items() if check[1]])
def test_a_fresh_workspace_reports_each_exercise_as_not_implemented(fresh, name):
    week, tasks, *_ = CHECKS[name]
    status, message = run_check(name, str(fresh))
    assert status == NOT_IMPLEMENTED, message
    named = "|".join(re.escape(task) for task in tasks)
    assert re.fullmatch(rf"week {week}, task ({named}): not implemented yet \(nn/[\w/]+\.py\)",
                        message), message


@pytest.mark.slow
def test_training_in_a_fresh_workspace_stops_at_a_stub_of_the_network(fresh):
    status, message = run_check("train_xor", str(fresh), str(fresh))
    assert status == NOT_IMPLEMENTED, message
    assert re.fullmatch(r"week 9, task [\w.]+: not implemented yet \(nn/[\w/]+\.py\)", message)


def test_the_week_route_grades_the_workspace_that_S2C_IMPL_names(fresh):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-m",
         "week09", "-k", "test_network_exercise and sequential"],
        cwd=ROOT, env=os.environ | {"S2C_IMPL": str(fresh)}, capture_output=True, text=True,
    )
    assert done.returncode == 1, done.stdout
    assert f"nn/ of {fresh}" in done.stdout
    assert "week 9, task Sequential.forward: not implemented yet" in done.stdout


IMPORT_EVERY_MODULE = """
import importlib, pkgutil, nn
names = [m.name for m in pkgutil.walk_packages(nn.__path__, "nn.")]
print([m.__file__ for m in map(importlib.import_module, names)])
"""


def test_every_module_of_a_workspace_network_imports_from_the_workspace(fresh):
    done = subprocess.run([sys.executable, "-c", IMPORT_EVERY_MODULE], cwd=ROOT,
                          env=os.environ | {"S2C_NN": str(fresh)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    files = eval(done.stdout)  # a list of paths printed by the child
    assert len(files) > 20 and all(file.startswith(str(fresh / "nn")) for file in files), files


# Planted bugs: the reference with one mistake a learner makes ----------------------------------
PLANTED = [  # (check, file, the reference's text, the bug, what the message must say)
    ("sequential", "layers/containers.py", "for layer in reversed(self.layers):",
     "for layer in self.layers:",
     r"^Sequential\.backward: dx \(the layers' backward in reverse order.*elements differ$"),
    ("optimizer", "optimizers.py", "state = [self.slot_arrays[name, slot] for slot in self.slots]",
     "state = [full(self.tier, shape_of(param.value), 0.0) for slot in self.slots]",
     r"^Optimizer\.step with Momentum, after step 2: w \(is the state of each parameter, "
     r"\['velocity'\], kept from step to step\?\)"),
    ("end_epoch", "trainer.py",
     "if recipe.patience and progress.epochs_without_improvement >= recipe.patience:",
     "if recipe.patience and progress.epochs_without_improvement > recipe.epochs:",
     r"^Trainer\.end_epoch: with patience 2 and validation losses .*, training should run 4 "
     r"epochs; it ran 8$"),
    ("end_epoch", "trainer.py", "        if improved:\n            self.save(self.best_path)",
     "        self.save(self.best_path)",
     r"^Trainer\.end_epoch: .* best\.npz holds epoch 4 with the weights of epoch 4; expected "
     r"epoch 2$"),
    ("linear", "layers/linear.py", "        self.x = x\n",
     "        self.x = getattr(self, 'x', x)\n",
     r"^Linear\.backward: weight\.grad \(dout\.T @ x, with x the last forward's input\)"),
    ("conv", "layers/conv.py", "need_dx=self.needs_input_grad", "need_dx=True",
     r"^Conv2d\.backward: with needs_input_grad False it must return None"),
    ("train_epoch", "trainer.py", "self.schedule(progress.step)", "self.schedule(progress.epoch)",
     r"^Trainer\.train_epoch: the steps ran at learning rates \[0\.1, 0\.1, 0\.1, 0\.1\], "),
    ("train_step", "steps/host.py", "        loss = checked_loss(loss, progress)\n", "",
     r"^HostStep\.run: loss .*as a float|^HostStep\.run: a NaN loss must raise"),
    ("train_step", "steps/host.py", "        self.optimizer.step(lr)\n",
     "        self.optimizer.step(lr)\n        self.optimizer.step(lr)\n",
     r"^HostStep\.run: the weight after one SGD step at lr 0\.3"),
    ("train_epoch", "trainer.py", "order[progress.batch * recipe.batch_size:]",
     "order[progress.batch:]",
     r"^Trainer\.train_epoch: the batches were .* cut into batches of 8: "),
    ("evaluate", "trainer.py", "        model.eval()\n", "",
     r"^Trainer\.evaluate: the model was in training mode during evaluation"),
    ("evaluate", "trainer.py", "* len(labels)", "",
     r"^Trainer\.evaluate: mean loss [\d.]+, expected [\d.]+ \(each batch's mean loss weighted"),
    ("residual", "layers/containers.py",
     "return self.tier.add(self.body.backward(dout), dskip)", "return self.body.backward(dout)",
     r"^Residual\.backward \(identity\): dx \(the body's input gradient plus the skip's\)"),
    ("batchnorm", "layers/batchnorm.py", "            self.training,\n", "            True,\n",
     r"^BatchNorm\.forward in evaluation: y \(the running statistics"),
]


@pytest.mark.parametrize(("check", "file", "reference", "bug", "message"), PLANTED,
                         ids=[f"{check}-{index}" for index, (check, *_) in enumerate(PLANTED)])
def test_a_planted_bug_fails_its_check_saying_what_is_wrong(tmp_path, check, file, reference,
                                                            bug, message):
    shutil.copytree(ROOT / "nn", tmp_path / "nn", ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "nn" / file
    text = source.read_text()
    assert text.count(reference) == 1, f"{file} no longer holds {reference!r} once"
    source.write_text(text.replace(reference, bug))
    status, said = run_check(check, str(tmp_path))
    assert status != PASSED, f"the planted bug in {file} passed {check}"
    assert re.search(message, said), said
