"""Open-domain QA sets in FlashRAG's versions and PubMedQA, scored by lexical EM / cover-EM / F1; CUPCase, scored
by HLE's LLM judge (PubMedQA and CUPCase are MARS's medical training sets).

Run: ``inspect eval tasks/qa.py@nq --model <model>`` (or ``mara_bench/nq``); ``mara tasks nq`` lists
the parameters. M-ASK's protocol: ``-T protocol=mask``. Each task is its declaration (``BenchmarkSpec``) above it.
"""

from inspect_ai import Task, task

from mara_bench.harness.datasets.formats import CUPCASE_HF, PUBMEDQA_HF
from mara_bench.harness.datasets.specs import BenchmarkSpec, flashrag_benchmark
from mara_bench.harness.task_builder import benchmark

NQ = flashrag_benchmark(
    name="nq",
    title="Natural Questions (open) test",
    hf_config="nq",
    split="test",
    local_files=("nq/nq_open_test_full_3610.json", "nq/nq_test_1k_subsample.jsonl"),
    source_names=("nq",),
    train_files=("nq/train.jsonl",),
)
TRIVIAQA = flashrag_benchmark(
    name="triviaqa",
    title="TriviaQA test (FlashRAG: unfiltered dev)",
    hf_config="triviaqa",
    split="test",
    local_files=("triviaqa/triviaqa_test_1k_subsample.jsonl",),
    source_names=("tq", "triviaqa"),
    train_files=("triviaqa/train.jsonl",),
)
POPQA = flashrag_benchmark(
    name="popqa",
    title="PopQA test",
    hf_config="popqa",
    split="test",
    local_files=("popqa/popqa_test_1k_subsample.jsonl",),
    source_names=("popqa",),
)
HOTPOTQA = flashrag_benchmark(
    name="hotpotqa",
    title="HotpotQA dev",
    hf_config="hotpotqa",
    split="dev",
    local_files=("hotpotqa/hotpotqa_dev_full_7405.json", "hotpotqa/hotpotqa_500.jsonl"),
    source_names=("hotpotqa",),
    train_files=("hotpotqa/train.jsonl",),
)
TWOWIKI = flashrag_benchmark(
    name="twowiki",
    title="2WikiMultiHopQA dev",
    hf_config="2wikimultihopqa",
    split="dev",
    local_files=("2wikimultihopqa/2wiki_dev_full_12576.json", "2wikimultihopqa/2wiki_500.jsonl"),
    source_names=("2wiki", "2wikimultihopqa"),
    train_files=("2wikimultihopqa/train.jsonl",),
)
MUSIQUE = flashrag_benchmark(
    name="musique",
    title="MuSiQue-Ans dev",
    hf_config="musique",
    split="dev",
    local_files=("musique/musique_dev_full_2417.json", "musique/musique_500.jsonl"),
    source_names=("musique",),
    train_files=("musique/train.jsonl",),
)
BAMBOOGLE = flashrag_benchmark(
    name="bamboogle",
    title="Bamboogle test (125)",
    hf_config="bamboogle",
    split="test",
    local_files=("bamboogle/bamboogle_test.jsonl", "bamboogle/bamboogle_r1searcher.jsonl"),
    source_names=("bamboogle",),
)
AMBIGQA = flashrag_benchmark(
    name="ambigqa",
    title="AmbigQA dev",
    hf_config="ambig_qa",
    split="dev",
    local_files=("ambigqa/ambigqa_dev_full_2002.json",),
    source_names=("ambigqa", "ambig_qa"),
)
# MARS's Biology & Medicine part (arXiv:2510.04935 C.7, Table 8: 500 sampled): PubMedQA's 1,000 expert-labelled
# questions, its only split "train", gold yes / no / maybe. No commit sha found; recorded at load time.
PUBMEDQA = BenchmarkSpec(
    name="pubmedqa",
    title="PubMedQA expert-labelled questions (1,000; answers yes / no / maybe), asked without their abstract; "
    "MARS trains on them",
    hf_path="qiaojin/PubMedQA",
    hf_config="pqa_labeled",
    split="train",
    judge="lexical",
    row_formats=(PUBMEDQA_HF,),
    instruction="direct_qa",
    question_template="direct_qa_user",
    local_files=("pubmedqa/pqa_labeled.parquet", "pubmedqa/train.jsonl"),
)
# MARS's Biology & Medicine part (arXiv:2510.04935 C.7, Table 8: 250 sampled): CUPCase's 3,562 case reports, its
# only split "test", gold the free-text diagnosis, asked with the CUPCase paper's free-text prompt and judged
# as MARS rewards every trajectory (C.3: HLE's judge prompt). No commit sha found; recorded at load time.
CUPCASE = BenchmarkSpec(
    name="cupcase",
    title="CUPCase clinical case reports (3,562), asked for the diagnosis in its paper's free-text prompt; "
    "MARS trains on them",
    hf_path="ofir408/CupCase",
    split="test",
    judge="hle",
    row_formats=(CUPCASE_HF,),
    local_files=("cupcase/test-00000-of-00001.parquet", "cupcase/test.jsonl"),
    question_frame="cupcase_free_text",
)


@task
@benchmark(NQ)
def nq() -> Task: ...


@task
@benchmark(TRIVIAQA)
def triviaqa() -> Task: ...


@task
@benchmark(POPQA)
def popqa() -> Task: ...


@task
@benchmark(HOTPOTQA)
def hotpotqa() -> Task: ...


@task
@benchmark(TWOWIKI)
def twowiki() -> Task: ...


@task
@benchmark(MUSIQUE)
def musique() -> Task: ...


@task
@benchmark(BAMBOOGLE)
def bamboogle() -> Task: ...


@task
@benchmark(AMBIGQA)
def ambigqa() -> Task: ...


@task
@benchmark(PUBMEDQA)
def pubmedqa() -> Task: ...


@task
@benchmark(CUPCASE)
def cupcase() -> Task: ...
