"""`mara index`: build a retrieval index from a corpus, or query one.

mara index build CORPUS.jsonl OUT/ [--kind e5|bm25] [--model NAME] [--batch-size N]
mara index query OUT/ "question" [-k 5]
"""

from __future__ import annotations

import argparse
import sys

from harness.retrieval.corpus import RetrievalError
from harness.retrieval.encoder import DEFAULT_MODEL, PASSAGE_PREFIX, QUERY_PREFIX
from harness.retrieval.index import build_index, load_index

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

    query = commands.add_parser("query", help="print the top-k passages for a question")
    query.add_argument("index", help="index directory")
    query.add_argument("question")
    query.add_argument("-k", type=int, default=5, help="number of passages (default 5)")
    query.add_argument(
        "--model", default=None, help="override the embedding model path recorded in the index"
    )
    return parser


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
            )
            print(f"indexed {manifest.count} passages ({manifest.kind}) into {args.out}")
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
