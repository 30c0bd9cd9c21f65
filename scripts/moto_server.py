"""moto's AWS emulator (DynamoDB, DynamoDB Streams, SQS) with every DynamoDB request serialised.

Why: moto's DynamoDB backend is not thread-safe. Under stock `moto_server`, concurrent
conditional updates sometimes both win and overlapping transactions oversell or leave partial
writes (measured: see docs/decisions/0013-serialised-moto-launcher.md). Real DynamoDB
serialises conflicting writes; one lock around every request whose X-Amz-Target starts with
"DynamoDB" gives the emulator the same guarantee, so the race tests check Lineup's conditions
and not moto's thread safety.

It also keeps a table's stream shard when moto rolls back a cancelled transaction (see
`keep_stream_shards_on_rollback`), rolls a cancelled transaction back from the items it touched
instead of from copies of whole tables (see `undo_only_touched_items`), stops moto keeping
every object it ever made (see `forget_model_instances`), and answers a Query without sorting
the whole table first (see `query_without_sorting_the_table`).

Usage: python scripts/moto_server.py --port 5005
"""

import argparse
import copy
import inspect
import logging
import sys
import threading
import time

import moto.dynamodb.models as dynamodb_models
from moto.core.common_models import BaseModel
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug import serving

DYNAMODB_LOCK = threading.Lock()


class SerialisedDynamoDB:
    """WSGI middleware: runs DynamoDB (and DynamoDB Streams) requests one at a time."""

    def __init__(self, app, stats=None):
        self.app = app
        self.stats = stats

    def __call__(self, environ, start_response):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            return self.app(environ, start_response)
        queued = time.perf_counter()
        with DYNAMODB_LOCK:
            started = time.perf_counter()
            # Produce the whole body inside the lock: moto may work lazily while iterating.
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                if hasattr(result, "close"):
                    result.close()
            if self.stats is not None:
                self.stats.add(target, started - queued, time.perf_counter() - started)
        return [body]


class LockStats:
    """With `--stats-every`: what each operation cost under the lock, and how long requests
    waited for it, printed to stderr every period (where the local stack's time goes)."""

    def __init__(self, every):
        self.every = every
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.by_operation = {}
        self.waited = 0.0
        self.longest_wait = 0.0

    def add(self, target, waited, busy):
        operation = target.rsplit(".", 1)[-1]
        with self.lock:
            count, total = self.by_operation.get(operation, (0, 0.0))
            self.by_operation[operation] = (count + 1, total + busy)
            self.waited += waited
            self.longest_wait = max(self.longest_wait, waited)

    def report_forever(self):
        while True:
            time.sleep(self.every)
            with self.lock:
                by_operation, waited, longest = self.by_operation, self.waited, self.longest_wait
                self.reset()
            requests = sum(count for count, _ in by_operation.values())
            busy = sum(total for _, total in by_operation.values())
            parts = ", ".join(
                f"{operation} {count} x {1000 * total / count:.1f} ms"
                for operation, (count, total) in sorted(
                    by_operation.items(), key=lambda entry: -entry[1][1]
                )
            )
            mean_wait = 1000 * waited / requests if requests else 0.0
            print(
                f"moto: {requests} requests in {self.every} s, lock busy {100 * busy / self.every:.0f} %, "
                f"wait mean {mean_wait:.0f} ms max {1000 * longest:.0f} ms; {parts}",
                file=sys.stderr,
                flush=True,
            )


def keep_stream_shards_on_rollback():
    """moto rolls a cancelled TransactWriteItems back by putting deep copies of the tables in
    place of the originals, stream shard included. A shard iterator handed out before then still
    reads the discarded shard, which holds the cancelled transaction's writes: a stream reader
    sees records that never happened (AWS never streams a cancelled transaction), and their
    sequence numbers are then reused by the next real writes. Measured: `lineup simulate` with
    duplicate webhooks published "ticket issued" for a replayed confirm and lost the next sale.
    Here the original shard object is kept, cut back to what it held before the transaction.
    (With `undo_only_touched_items` the tables, shard included, are no longer swapped; the cut
    is still what removes the cancelled transaction's records.)"""
    transact = DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        shards = {
            name: (table.stream_shard, len(table.stream_shard.items))
            for name, table in self.tables.items()
            if table.stream_shard is not None
        }
        try:
            return transact(self, transact_items)
        except Exception:
            for name, (shard, length) in shards.items():
                del shard.items[length:]
                table = self.tables.get(name)
                if table is not None and table.stream_shard is not shard:
                    table.stream_shard = shard
                    shard.table = table
            raise


    DynamoDBBackend.transact_write_items = transact_write_items


def undo_only_touched_items():
    """moto's `transact_write_items` deep-copies every table a transaction names before applying
    it, and puts the copies back if the transaction is cancelled. So every TransactWriteItems
    (each hold, each confirm) costs time in proportion to the size of the tables it touches:
    measured 24 ms at 1,000 small items, 0.58 s at 20,000, 2.8 s at 80,000; under the one lock,
    the whole local stack stalls behind it (BENCHMARKS.md section 7). Now about 4 ms at each.

    Here the tables are not copied (moto's `copy.deepcopy` of a Table returns the table itself;
    its rollback then puts each table back in its own place, which changes nothing). Instead,
    before moto runs the transaction, the prior state of each item the transaction names is
    recorded: a copy of the item, or its absence. If moto raises (cancelled, or a validation
    error partway through), each is put back: an item the transaction created is removed again,
    one it deleted or overwrote returns, one it updated in place is replaced by the copy.

    That is all a transaction changes in moto: items live only in `Table.items` (hash-only
    tables: `{hash: Item}`; hash+range: `{hash: {range: Item}}`); secondary indexes and item
    counts are computed from `Table.items` when asked; stream records are cut back by
    `keep_stream_shards_on_rollback`. Reading a missing hash key of a hash+range table leaves an
    empty `{}` under it (`items` is a defaultdict); one the transaction left behind is removed."""
    transact = DynamoDBBackend.transact_write_items

    class TablesNotCopied:
        """Stands in for `copy` inside moto.dynamodb.models, where only this rollback copies a
        Table (backups copy tables elsewhere, with the real `copy`)."""

        def __getattr__(self, name):
            return getattr(copy, name)

        @staticmethod
        def deepcopy(value, memo=None):
            if isinstance(value, Table):
                return value
            return copy.deepcopy(value, memo)

    dynamodb_models.copy = TablesNotCopied()

    def touched_key(backend, transact_item):
        """(table, hash, range) of the item one transaction entry names, or None where moto
        will refuse the entry before writing anything (unknown table, key attribute missing)."""
        try:
            op_type, op = next(iter(transact_item.items()))
            table = backend.get_table(op["TableName"])
            key = op["Item"] if op_type == "Put" else op["Key"]
            hash_value = DynamoType(key[table.hash_key_attr])
            range_value = None
            if table.range_key_attr is not None:
                range_value = DynamoType(key[table.range_key_attr])
            return table, hash_value, range_value
        except Exception:
            return None

    def prior_state(table, hash_value, range_value):
        if range_value is None:
            item = table.items.get(hash_value)
            had_bucket = True
        else:
            bucket = table.items.get(hash_value)
            had_bucket = bucket is not None
            item = bucket.get(range_value) if bucket is not None else None
        return copy.deepcopy(item), had_bucket

    def restore(table, hash_value, range_value, item, had_bucket):
        if range_value is None:
            if item is None:
                table.items.pop(hash_value, None)
            else:
                table.items[hash_value] = item
            return
        bucket = table.items.get(hash_value)
        if item is None:
            if bucket is not None:
                bucket.pop(range_value, None)
                if not bucket and not had_bucket:
                    del table.items[hash_value]
        else:
            table.items[hash_value][range_value] = item

    def transact_write_items(self, transact_items):
        undo = {}
        for transact_item in transact_items:
            touched = touched_key(self, transact_item)
            if touched is not None:
                table, hash_value, range_value = touched
                where = (id(table), hash_value, range_value)
                if where not in undo:
                    undo[where] = (touched, prior_state(*touched))
        try:
            return transact(self, transact_items)
        except Exception:
            for (table, hash_value, range_value), (item, had_bucket) in undo.values():
                restore(table, hash_value, range_value, item, had_bucket)
            raise

    DynamoDBBackend.transact_write_items = transact_write_items


def query_without_sorting_the_table():
    """moto answers every Query by listing all the table's items *sorted* (`Table.all_items`),
    then keeping those of the key asked for and sorting those again. The sort costs the whole
    table on every Query: with the orders table of a 20,000-seat `lineup simulate` (about 30,000
    items) each of the expiry sweep's eight index queries took 0.3 s and growing, until the sweep
    alone kept the lock busy. Here, during a Query, `all_items` lists a table query's one key
    (hash and range tables keep each key's items together) or, for an index, the items that have
    the index's key attributes (the only ones an index holds), unsorted; moto's own sort of the
    matches then gives the same order as before (its keys end with the table's key, which is
    unique). Measured: BENCHMARKS.md section 7 (`scripts/moto_query_bench.py`)."""
    query = Table.query
    parameters = inspect.signature(query)

    def unsorted_items(table, hash_key, index_name):
        if index_name is None and hash_key is not None:
            bucket = table.items.get(hash_key)
            if bucket is None:
                return []
            return list(bucket.values()) if table.range_key_attr else [bucket]
        # An index holds only the items that have its key attributes (a sparse index, like the
        # sweep's, a small share of the table): the others are left out here, in one pass.
        index = {index.name: index for index in table.all_indexes()}.get(index_name)
        if index is None:
            return unsorted(table)  # moto answers an unknown index with its own error
        key = next(key["AttributeName"] for key in index.schema if key["KeyType"] == "HASH")
        buckets = table.items.values()
        if table.range_key_attr:
            return [item for bucket in buckets for item in bucket.values() if key in item.attrs]
        return [item for item in buckets if key in item.attrs]

    def unsorted(table):
        if table.range_key_attr:
            return [item for bucket in table.items.values() for item in bucket.values()]
        return list(table.items.values())

    def query_unsorted(self, *args, **kwargs):
        bound = parameters.bind(self, *args, **kwargs).arguments
        hash_key, index_name = bound.get("hash_key"), bound.get("index_name")
        self.all_items = lambda: unsorted_items(self, hash_key, index_name)
        try:
            return query(self, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = query_unsorted


def forget_model_instances():
    """moto appends every model object it creates (each item, each stream record, each table) to
    a class-level list, for its dashboard, and never lets go. A TransactWriteItems deep-copies
    every table it touches (to roll back with), so each transaction keeps a whole copy of them
    alive: measured 2.4 MB per transaction on a 500-item table, and 10 GB, with requests slowing
    to a crawl, during a 10,000-customer `lineup simulate`. Nothing here uses the dashboard."""

    def untracked(cls, *args, **kwargs):
        return object.__new__(cls)

    BaseModel.__new__ = untracked


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5005)
    parser.add_argument(
        "--stock-rollback",
        action="store_true",
        help="roll cancelled transactions back with moto's whole-table copies (for comparison)",
    )
    parser.add_argument(
        "--stock-query",
        action="store_true",
        help="answer a Query as stock moto does, sorting the whole table first (for comparison)",
    )
    parser.add_argument(
        "--stats-every",
        type=float,
        metavar="SECONDS",
        help="print each DynamoDB operation's count and time under the lock this often",
    )
    parser.add_argument(
        "--log-requests",
        action="store_true",
        help="log every request (werkzeug's access log; off by default: at hundreds of requests a "
        "second the log lines cost the serialised server time of its own)",
    )
    args = parser.parse_args()
    if not args.log_requests:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
    keep_stream_shards_on_rollback()
    if not args.stock_rollback:
        undo_only_touched_items()
    forget_model_instances()
    if not args.stock_query:
        query_without_sorting_the_table()
    stats = LockStats(args.stats_every) if args.stats_every else None
    if stats is not None:
        threading.Thread(target=stats.report_forever, daemon=True).start()
    app = SerialisedDynamoDB(DomainDispatcherApplication(create_backend_app), stats)
    # Race tests open hundreds of connections at once; werkzeug's default listen backlog (128)
    # overflows and clients see connect timeouts. The kernel caps this at net.core.somaxconn.
    serving.ThreadedWSGIServer.request_queue_size = 4096
    serving.run_simple(args.host, args.port, app, threaded=True, use_reloader=False)


if __name__ == "__main__":
    main()
