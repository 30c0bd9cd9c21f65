"""Time one hold-like TransactWriteItems against a moto launcher, on tables of several sizes.

A hold is a transaction of two writes: an Update of one seat with a condition (it must be
AVAILABLE) and a Put of one new hold record. Stock moto deep-copies every table a transaction
names (to roll back with), so the hold's cost grows with the table; `scripts/moto_server.py`
rolls back from the touched items only. Run it against both to compare:

    .local/venv/bin/python scripts/moto_server.py --port 5141 --stock-rollback &
    .local/venv/bin/python scripts/moto_server.py --port 5140 &
    .local/venv/bin/python scripts/moto_transaction_bench.py --endpoint http://127.0.0.1:5141
    .local/venv/bin/python scripts/moto_transaction_bench.py --endpoint http://127.0.0.1:5140

For each size it makes a fresh hash-only table, seeds it (BatchWriteItem), then times `--runs`
holds that succeed and `--runs` that are cancelled (the seat is already held), and prints the
median of each. A measurement, not a test: figures go in BENCHMARKS.md section 7.
"""

import argparse
import statistics
import time
import uuid

import boto3


def client(endpoint):
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def seed(dynamodb, size):
    table = f"bench-{uuid.uuid4().hex}"
    dynamodb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    for start in range(0, size, 25):
        requests = [
            {
                "PutRequest": {
                    "Item": {
                        "pk": {"S": f"seat#{n}"},
                        "status": {"S": "AVAILABLE"},
                        "section": {"S": f"section-{n % 40}"},
                        "price": {"N": "4500"},
                    }
                }
            }
            for n in range(start, min(start + 25, size))
        ]
        dynamodb.batch_write_item(RequestItems={table: requests})
    return table


def hold(dynamodb, table, seat, hold_id):
    """One hold; True if it went through, False if cancelled."""
    try:
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table,
                        "Key": {"pk": {"S": f"seat#{seat}"}},
                        "UpdateExpression": "SET #status = :held, hold_id = :hold",
                        "ConditionExpression": "#status = :available",
                        "ExpressionAttributeNames": {"#status": "status"},
                        "ExpressionAttributeValues": {
                            ":held": {"S": "HELD"},
                            ":available": {"S": "AVAILABLE"},
                            ":hold": {"S": hold_id},
                        },
                    }
                },
                {
                    "Put": {
                        "TableName": table,
                        "Item": {
                            "pk": {"S": f"hold#{hold_id}"},
                            "seat": {"S": f"seat#{seat}"},
                        },
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
        return True
    except dynamodb.exceptions.TransactionCanceledException:
        return False


def timed(action):
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default="http://127.0.0.1:5140")
    parser.add_argument("--sizes", default="1000,20000,80000")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    dynamodb = client(args.endpoint)
    print("items\tseed s\tsucceeded median ms\tcancelled median ms")
    for size in (int(s) for s in args.sizes.split(",")):
        seed_s, table = timed(lambda: seed(dynamodb, size))
        succeeded, cancelled = [], []
        for run in range(args.runs):
            took, ok = timed(lambda: hold(dynamodb, table, run, uuid.uuid4().hex))
            assert ok, "a hold on an available seat went through"
            succeeded.append(took)
            took, ok = timed(lambda: hold(dynamodb, table, run, uuid.uuid4().hex))
            assert not ok, "a hold on a held seat was cancelled"
            cancelled.append(took)
        print(
            f"{size}\t{seed_s:.1f}\t{statistics.median(succeeded) * 1000:.1f}"
            f"\t{statistics.median(cancelled) * 1000:.1f}",
            flush=True,
        )
        dynamodb.delete_table(TableName=table)


if __name__ == "__main__":
    main()
