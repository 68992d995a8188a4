"""The leaderboard history: runs, their metrics and per-sample scores in any SQLAlchemy database.

SQLite is the default (WAL journal, write transactions taken with ``BEGIN IMMEDIATE`` and a busy timeout, so two
ingesters can share one file). Ingestion is idempotent: a run is keyed by the SHA-256 of its log file, checked
before the log is parsed and enforced by a unique constraint, so a log ingested twice (or by two processes at once)
is stored once.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from mara_bench.leaderboards.collect import (
    SkippedLogWarning,
    UnusableLog,
    file_hash,
    file_stat,
    list_logs,
    read_run,
)
from mara_bench.leaderboards.records import MetricValue, RunRecord, SampleScore

SQLITE_BUSY_TIMEOUT_S = 60
RUN_LISTS = ("metrics", "samples")
"""The ``RunRecord`` fields stored as rows of their own tables (``metrics``, ``sample_scores``), not as columns."""


class Base(DeclarativeBase):
    """Declarative base of the history tables."""


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    log_hash: Mapped[str] = mapped_column(String(64), unique=True)
    log_location: Mapped[str] = mapped_column(Text)
    checkpoint: Mapped[str] = mapped_column(String(300))
    model: Mapped[str] = mapped_column(String(300))
    task: Mapped[str] = mapped_column(String(200))
    inspect_task: Mapped[str] = mapped_column(String(200))
    system: Mapped[str] = mapped_column(String(100))
    protocol: Mapped[str] = mapped_column(String(100))
    judge: Mapped[str] = mapped_column(String(300))
    judge_model: Mapped[str | None] = mapped_column(String(300))
    dataset_hash: Mapped[str] = mapped_column(String(64))
    code_version: Mapped[str | None] = mapped_column(String(100))
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    night: Mapped[str] = mapped_column(String(40))
    suite: Mapped[str | None] = mapped_column(String(200))
    headline_score: Mapped[str | None] = mapped_column(String(200))
    headline_metric: Mapped[str | None] = mapped_column(String(200))
    headline_value: Mapped[float | None] = mapped_column(Float)
    headline_ci_low: Mapped[float | None] = mapped_column(Float)
    headline_ci_high: Mapped[float | None] = mapped_column(Float)
    n_samples: Mapped[int] = mapped_column(Integer)
    tool_snapshot: Mapped[str | None] = mapped_column(String(300))
    """The tool responses the run saw (a frozen snapshot ``NAME@id``); ``None``: the live web."""
    n_unscored: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Samples the grader could not judge (or that errored): shown beside every metric of the run."""
    ingested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_runs_series", "task", "checkpoint", "system", "protocol", "night"),)

    @property
    def series(self) -> tuple[str, str, str, str]:
        """What makes two runs the same line on the leaderboard over nights."""
        return (self.checkpoint, self.task, self.system, self.protocol)


class Metric(Base):
    __tablename__ = "metrics"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    score: Mapped[str] = mapped_column(String(200))
    metric: Mapped[str] = mapped_column(String(200))
    value: Mapped[float] = mapped_column(Float)
    stderr: Mapped[float | None] = mapped_column(Float)
    ci_low: Mapped[float | None] = mapped_column(Float)
    ci_high: Mapped[float | None] = mapped_column(Float)


class SeenLog(Base):
    """A log file already hashed, by location, with the size and modification time it had then."""

    __tablename__ = "seen_logs"

    location: Mapped[str] = mapped_column(String(1000), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mtime_ns: Mapped[int] = mapped_column(BigInteger)
    log_hash: Mapped[str] = mapped_column(String(64))


class SampleRow(Base):
    __tablename__ = "sample_scores"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    score: Mapped[str] = mapped_column(String(200))
    sample_id: Mapped[str] = mapped_column(String(300))
    value: Mapped[float] = mapped_column(Float)
    answer: Mapped[str | None] = mapped_column(Text)


@dataclass
class IngestReport:
    """What one ingestion pass did; ``skipped`` names the unusable logs, ``hashes`` are the stored logs' keys."""

    added: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)


def database_url(value: str) -> str:
    """A SQLAlchemy URL from ``value``: a URL is kept, a plain path becomes a SQLite file URL."""
    return value if "://" in value else f"sqlite:///{Path(value).resolve()}"


SQLITE_MAGIC = b"SQLite format 3\x00"


def database_problem(value: str) -> str | None:
    """Why ``value`` (a ``--db`` argument) cannot hold the history, or ``None``: an unknown URL scheme, or a
    SQLite path at a folder or at a file that is not a SQLite database. Reads a file header only."""
    try:
        url = make_url(database_url(value))
        url.get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError):
        scheme = value.split("://", 1)[0]
        return (
            f"unknown database URL scheme {scheme!r}; give a SQLite file path or a SQLAlchemy URL "
            "(sqlite:///history.sqlite, postgresql+psycopg://user@host/db)"
        )
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    path = Path(url.database)
    if path.is_dir():
        return "is a folder; give a database file path"
    if not path.parent.is_dir():
        return f"its folder {path.parent} does not exist; create it or give another path"
    if path.is_file() and path.stat().st_size:
        with open(path, "rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return "is not a SQLite database; point --db at a history database, or at a new file name"
    return None


class HistoryStore:
    """Runs over nights in one database (``sqlite:///history.sqlite`` or e.g. ``postgresql+psycopg://…``)."""

    def __init__(self, url: str):
        self.url = database_url(url)
        self.engine = _engine(self.url)
        Base.metadata.create_all(self.engine)
        _add_missing_columns(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def has_log(self, log_hash: str) -> bool:
        with Session(self.engine) as session:
            return session.scalar(select(Run.id).where(Run.log_hash == log_hash)) is not None

    def ingest(self, location: str) -> IngestReport:
        """Add every usable log under ``location`` not yet stored; warns (naming it) for each unusable log.

        A log file seen before with the same size and modification time is not read again: its stored hash is
        used (a nightly's folder of earlier nights is not re-hashed every night). What is stored and seen is read
        once per pass; a log a concurrent ingester stores meanwhile is still stored once (``add``)."""
        report = IngestReport()
        with Session(self.engine) as session:
            stored = set(session.scalars(select(Run.log_hash)))
            seen = {row.location: row for row in session.scalars(select(SeenLog))}
        newly_seen: list[SeenLog] = []
        for path in list_logs(location):
            try:
                stat = file_stat(path)
                known = _known_hash(seen.get(path), stat)
                log_hash = known or file_hash(path)
            except OSError as error:
                _warn_skipped(path, f"cannot be opened ({error})", report)
                continue
            if known is None and stat is not None:
                newly_seen.append(SeenLog(location=path, size=stat[0], mtime_ns=stat[1], log_hash=log_hash))
            if log_hash in stored or self.has_log(log_hash):
                report.already_present.append(path)
                report.hashes.append(log_hash)
                continue
            try:
                record = read_run(path, log_hash)
            except UnusableLog as error:
                _warn_skipped(path, str(error), report)
                continue
            (report.added if self.add(record) else report.already_present).append(path)
            report.hashes.append(log_hash)
        self._remember(newly_seen)
        return report

    def _remember(self, rows: list[SeenLog]) -> None:
        """Store the size, modification time and hash of the files hashed in this pass."""
        if rows:
            with Session(self.engine) as session, session.begin():
                for row in rows:
                    session.merge(row)

    def add(self, record: RunRecord) -> bool:
        """Store one run; False when a run with the same log hash is already stored (by us or a concurrent writer)."""
        headline = record.headline
        try:
            with Session(self.engine) as session, session.begin():
                run = Run(
                    **run_columns(record),
                    headline_value=headline.value if headline else None,
                    headline_ci_low=headline.ci_low if headline else None,
                    headline_ci_high=headline.ci_high if headline else None,
                    ingested_at=datetime.now(UTC),
                )
                session.add(run)
                session.flush()
                if record.metrics:
                    session.execute(insert(Metric), [_row(run.id, m) for m in record.metrics])
                if record.samples:
                    session.execute(insert(SampleRow), [_row(run.id, s) for s in record.samples])
        except IntegrityError:
            return False
        return True

    def runs(self, **filters: str) -> list[Run]:
        """Runs matching equality ``filters`` on run columns, oldest first."""
        with Session(self.engine, expire_on_commit=False) as session:
            query = select(Run).order_by(Run.created, Run.id)
            for column, value in filters.items():
                query = query.where(getattr(Run, column) == value)
            return list(session.scalars(query))

    def run_for_log(self, log_hash: str) -> Run | None:
        with Session(self.engine, expire_on_commit=False) as session:
            return session.scalar(select(Run).where(Run.log_hash == log_hash))

    def metrics(self, run_id: int) -> list[Metric]:
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.scalars(select(Metric).where(Metric.run_id == run_id).order_by(Metric.id)))

    def sample_scores(self, run_id: int, score: str) -> dict[str, tuple[float, str | None]]:
        """``{sample_id: (value, answer)}`` of one score of one run."""
        with Session(self.engine) as session:
            rows = session.execute(
                select(SampleRow.sample_id, SampleRow.value, SampleRow.answer).where(
                    SampleRow.run_id == run_id, SampleRow.score == score
                )
            )
            return {sample_id: (value, answer) for sample_id, value, answer in rows}

    def count(self, table: type[Base]) -> int:
        with Session(self.engine) as session:
            return int(session.scalar(select(func.count()).select_from(table)) or 0)


def run_columns(record: RunRecord) -> dict[str, Any]:
    """The ``runs`` columns of a record: every field of ``RunRecord`` but its metric and sample lists (stored in
    their own tables)."""
    return {f.name: getattr(record, f.name) for f in fields(record) if f.name not in RUN_LISTS}


def _row(run_id: int, item: MetricValue | SampleScore) -> dict[str, Any]:
    """A ``metrics`` or ``sample_scores`` row: the fields of ``item`` and the run it belongs to."""
    return {"run_id": run_id, **asdict(item)}


def _warn_skipped(path: str, reason: str, report: IngestReport) -> None:
    warnings.warn(f"skipping log {path}: {reason}", SkippedLogWarning, stacklevel=3)
    report.skipped.append(path)


def _known_hash(seen: SeenLog | None, stat: tuple[int, int] | None) -> str | None:
    """The hash stored for a file when its size and modification time are still the ones it had then."""
    if seen is None or stat is None or (seen.size, seen.mtime_ns) != stat:
        return None
    return seen.log_hash


def _add_missing_columns(engine: Engine) -> None:
    """Add the columns a history written by an older version lacks (``create_all`` only creates missing tables)."""
    present = {column["name"] for column in inspect(engine).get_columns(Run.__tablename__)}
    with engine.begin() as connection:
        for column in Run.__table__.columns:
            if column.name not in present:
                kind = column.type.compile(engine.dialect)
                default = f" DEFAULT {column.server_default.arg}" if column.server_default is not None else ""
                connection.exec_driver_sql(
                    f"ALTER TABLE {Run.__tablename__} ADD COLUMN {column.name} {kind}{default}"
                )


def _engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # let SQLAlchemy's BEGIN below start transactions
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine
