"""`mara index`: build a retrieval index from a corpus, or query one.

mara index build CORPUS.jsonl OUT/ [--kind e5|bm25] [--model NAME] [--batch-size N] [--index-type "IVF4096,PQ64"]
mara index import OUT/ --corpus wiki18_100w.jsonl (--faiss e5_Flat.index | --bm25 bm25/)
mara index query OUT/ "question" [-k 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mara_bench.harness.retrieval.corpus import RetrievalError
from mara_bench.harness.retrieval.encoder import DEFAULT_MODEL, PASSAGE_PREFIX, QUERY_PREFIX
from mara_bench.harness.retrieval.faiss_build import EXACT_TYPE
from mara_bench.harness.retrieval.importer import import_flashrag
from mara_bench.harness.retrieval.index import build_index, load_index
from mara_bench.harness.retrieval.store import Manifest

KIND_CHOICES = {"e5": "dense", "dense": "dense", "bm25": "bm25"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mara index", description="Build or query a local retrieval index.")
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="index a {'id', 'contents'} JSON-lines corpus (wiki-18 format)")
    build.add_argument("corpus", help="corpus file, one {'id', 'contents'} object per line")
    build.add_argument("out", help="output index directory (created; must be empty or an older index)")
    build.add_argument(
        "--kind", choices=sorted(KIND_CHOICES), default="e5", help="e5/dense: embeddings + FAISS; bm25: BM25"
    )
    build.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"sentence-transformers model (default {DEFAULT_MODEL})"
    )
    build.add_argument("--batch-size", type=int, default=64, help="passages per encoding batch (default 64)")
    build.add_argument(
        "--query-prefix", default=QUERY_PREFIX, help=f"prefix for queries (default {QUERY_PREFIX!r})"
    )
    build.add_argument(
        "--passage-prefix", default=PASSAGE_PREFIX, help=f"prefix for passages (default {PASSAGE_PREFIX!r})"
    )
    build.add_argument("--device", default=None, help="torch device for encoding (default: automatic)")
    build.add_argument(
        "--index-type",
        default=EXACT_TYPE,
        help="faiss.index_factory string: Flat (exact, default), SQfp16, HNSW32, IVF4096,PQ64 ...",
    )
    build.add_argument(
        "--search-params", default="", help="FAISS search settings kept with the index, e.g. nprobe=64"
    )
    build.add_argument(
        "--train-rows", type=int, default=None, help="passages to train IVF/PQ/SQ8 types on (default 100k+)"
    )

    imported = commands.add_parser(
        "import", help="serve FlashRAG's released corpus + FAISS index (or bm25s folder) in place, verified"
    )
    imported.add_argument("out", help="output index directory (holds links to the files, not copies)")
    imported.add_argument("--corpus", required=True, help="FlashRAG corpus JSONL (wiki18_100w.jsonl)")
    source = imported.add_mutually_exclusive_group(required=True)
    source.add_argument("--faiss", help="FlashRAG's FAISS index file (e5_Flat.index)")
    source.add_argument("--bm25", help="FlashRAG's bm25s index folder (bm25/)")
    imported.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"the model the FAISS index was embedded with ({DEFAULT_MODEL})",
    )

    query = commands.add_parser("query", help="print the top-k passages for a question")
    query.add_argument("index", help="index directory")
    query.add_argument("question")
    query.add_argument("-k", type=int, default=5, help="number of passages (default 5)")
    query.add_argument(
        "--model", default=None, help="override the embedding model path recorded in the index"
    )
    return parser


def _describe(manifest: Manifest) -> str:
    quality = manifest.dense_index
    if quality is None:
        return manifest.kind
    recall = "not measured" if quality.recall_at_k is None else f"{quality.recall_at_k:.3f}"
    return f"dense {quality.index_type}, recall@{quality.recall_k} vs Flat {recall}"


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            manifest = build_index(
                args.corpus,
                args.out,
                kind=KIND_CHOICES[args.kind],
                model=args.model,
                query_prefix=args.query_prefix,
                passage_prefix=args.passage_prefix,
                batch_size=args.batch_size,
                device=args.device,
                index_type=args.index_type,
                search_params=args.search_params,
                train_rows=args.train_rows,
            )
            print(f"indexed {manifest.count} passages ({_describe(manifest)}) into {args.out}")
        elif args.command == "import":
            manifest = import_flashrag(
                args.out,
                args.corpus,
                faiss_index=args.faiss and Path(args.faiss),
                bm25_dir=args.bm25 and Path(args.bm25),
                model=args.model,
            )
            print(f"imported {manifest.count} passages ({_describe(manifest)}) into {args.out}, checked")
        else:
            if args.k < 1:
                raise RetrievalError(f"-k must be at least 1, got {args.k}")
            for rank, passage in enumerate(
                load_index(args.index, model=args.model).search(args.question, args.k), 1
            ):
                print(
                    f"[{rank}] {passage.title} (id {passage.id}, score {passage.score:.4f})\n{passage.text}\n"
                )
    except RetrievalError as err:
        print(f"mara index: {err}", file=sys.stderr)
        return 2
    return 0
