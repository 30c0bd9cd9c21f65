"""moto's AWS emulator (DynamoDB, DynamoDB Streams, SQS) with every DynamoDB request serialised.

Why: moto's DynamoDB backend is not thread-safe. Under stock `moto_server`, concurrent
conditional updates sometimes both win and overlapping transactions oversell or leave partial
writes (measured: see docs/decisions/0013-serialised-moto-launcher.md). Real DynamoDB
serialises conflicting writes; one lock around every request whose X-Amz-Target starts with
"DynamoDB" gives the emulator the same guarantee, so the race tests check Lineup's conditions
and not moto's thread safety.

It also keeps a table's stream shard when moto rolls back a cancelled transaction (see
`keep_stream_shards_on_rollback`), and stops moto keeping every object it ever made (see
`forget_model_instances`).

Usage: python scripts/moto_server.py --port 5005
"""

import argparse
import threading

from moto.core.common_models import BaseModel
from moto.dynamodb.models import DynamoDBBackend
from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug import serving

DYNAMODB_LOCK = threading.Lock()


class SerialisedDynamoDB:
    """WSGI middleware: runs DynamoDB (and DynamoDB Streams) requests one at a time."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        with DYNAMODB_LOCK:
            # Produce the whole body inside the lock: moto may work lazily while iterating.
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                if hasattr(result, "close"):
                    result.close()
        return [body]


def keep_stream_shards_on_rollback():
    """moto rolls a cancelled TransactWriteItems back by putting deep copies of the tables in
    place of the originals, stream shard included. A shard iterator handed out before then still
    reads the discarded shard, which holds the cancelled transaction's writes: a stream reader
    sees records that never happened (AWS never streams a cancelled transaction), and their
    sequence numbers are then reused by the next real writes. Measured: `lineup simulate` with
    duplicate webhooks published "ticket issued" for a replayed confirm and lost the next sale.
    Here the original shard object is kept, cut back to what it held before the transaction."""
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
    args = parser.parse_args()
    keep_stream_shards_on_rollback()
    forget_model_instances()
    app = SerialisedDynamoDB(DomainDispatcherApplication(create_backend_app))
    # Race tests open hundreds of connections at once; werkzeug's default listen backlog (128)
    # overflows and clients see connect timeouts. The kernel caps this at net.core.somaxconn.
    serving.ThreadedWSGIServer.request_queue_size = 4096
    serving.run_simple(args.host, args.port, app, threaded=True, use_reloader=False)


if __name__ == "__main__":
    main()
