"""Open-domain QA sets in FlashRAG's versions and PubMedQA, scored by lexical EM / cover-EM / F1; CUPCase, scored
by HLE's LLM judge (PubMedQA and CUPCase are MARS's medical training sets).

Run: ``inspect eval tasks/qa.py@nq --model <model>`` (or ``mara_bench/nq``) ``[-T system=direct]
[-T protocol=…] [-T judge=…] [-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K]
[-T reducers=…]``; any other ``-T`` option goes to the system. M-ASK's protocol: ``-T protocol=mask``.
"""

from inspect_ai import Task, task

from harness.tasks import benchmark


@task
@benchmark
def nq() -> Task:
    """Natural Questions (open) test. Dataset: RUC-NLPIR/FlashRAG_datasets · judge: lexical · protocol: default."""


@task
@benchmark
def triviaqa() -> Task:
    """TriviaQA test (FlashRAG: unfiltered dev). Dataset: RUC-NLPIR/FlashRAG_datasets · judge: lexical ·
    protocol: default."""


@task
@benchmark
def popqa() -> Task:
    """PopQA test. Dataset: RUC-NLPIR/FlashRAG_datasets · judge: lexical · protocol: default."""


@task
@benchmark
def hotpotqa() -> Task:
    """HotpotQA dev. Dataset: RUC-NLPIR/FlashRAG_datasets · judge: lexical · protocol: default."""


@task
@benchmark
def twowiki() -> Task:
    """2WikiMultiHopQA dev. Dataset: RUC-NLPIR/FlashRAG_datasets · judge: lexical · protocol: default."""


@task
@benchmark
def musique() -> Task:
    """MuSiQue-Ans dev. Dataset: RUC-NLPIR/FlashRAG_datasets · judge: lexical · protocol: default."""


@task
@benchmark
def bamboogle() -> Task:
    """Bamboogle test (125). Dataset: RUC-NLPIR/FlashRAG_datasets · judge: lexical · protocol: default."""


@task
@benchmark
def ambigqa() -> Task:
    """AmbigQA dev. Dataset: RUC-NLPIR/FlashRAG_datasets · judge: lexical · protocol: default."""


@task
@benchmark
def pubmedqa() -> Task:
    """PubMedQA expert-labelled questions (1,000; answers yes / no / maybe), asked without their abstract; its one
    split is ``train`` (MARS trains on it). Dataset: qiaojin/PubMedQA · judge: lexical · protocol: default."""


@task
@benchmark
def cupcase() -> Task:
    """CUPCase clinical case reports (3,562), asked for the diagnosis in its paper's free-text prompt and judged as
    MARS rewards; its one split is ``test`` (MARS trains on it). Dataset: ofir408/CupCase · judge: hle · protocol:
    default."""
