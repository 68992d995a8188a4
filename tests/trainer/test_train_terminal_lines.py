"""``mara train`` shows the trainer's log lines on stdout as plain lines (warnings prefixed), and only while it
trains: the library itself configures no output."""

from __future__ import annotations

import logging

from mara_bench.trainer.run.cli import TerminalLines, trainer_lines


def test_the_trainers_lines_show_on_stdout_while_mara_train_runs(capsys):
    warmup = logging.getLogger("mara_bench.trainer.run.warmup")
    parity = logging.getLogger("mara_bench.trainer.rollouts.parity")
    trainer = logging.getLogger("mara_bench.trainer")
    with trainer_lines():
        warmup.info("warmup: %d steps, loss %.3f -> %.3f", 3, 2.0, 1.5)
        parity.warning("step 3: the gap exceeds rollout.parity_bound")
        logging.getLogger("mara_bench.harness.systems").info("not the trainer's")
    assert capsys.readouterr().out == (
        "warmup: 3 steps, loss 2.000 -> 1.500\nwarning: step 3: the gap exceeds rollout.parity_bound\n"
    )
    assert not any(isinstance(handler, TerminalLines) for handler in trainer.handlers)
    warmup.info("after the run")
    assert capsys.readouterr().out == ""
