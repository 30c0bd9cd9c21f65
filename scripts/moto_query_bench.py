"""Time the Queries Lineup makes against a moto launcher, on tables of several sizes.

Stock moto lists and sorts a table's every item for each Query; `scripts/moto_server.py` lists
only the key asked for (for a sparse index, only the items it holds). Run it against both:

    .local/venv/bin/python scripts/moto_server.py --port 5143 --stock-query &
    .local/venv/bin/python scripts/moto_server.py --port 5142 &
    .local/venv/bin/python scripts/moto_query_bench.py --endpoint http://127.0.0.1:5143
    .local/venv/bin/python scripts/moto_query_bench.py --endpoint http://127.0.0.1:5142

For each size it makes a fresh table shaped like the orders table (hash and range key; one
item in 50 carries the keys of a sparse index, as PENDING orders carry the sweep's), then times
`--runs` Queries of one partition (3 items; as a layout's parts are read) and of the index (one
of 8 shards, nothing lapsed: an expiry sweep with nothing to do), and prints the medians. A
measurement, not a test: figures go in BENCHMARKS.md section 7.
"""

import argparse
import statistics
import uuid

from moto_transaction_bench import client, timed

SHARDS = 8


def seed(dynamodb, size):
    table = f"bench-{uuid.uuid4().hex}"
    dynamodb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": kind}
            for name, kind in [("pk", "S"), ("sk", "S"), ("lane", "S"), ("expires", "N")]
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "pending",
                "KeySchema": [
                    {"AttributeName": "lane", "KeyType": "HASH"},
                    {"AttributeName": "expires", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    for start in range(0, size, 25):
        requests = []
        for n in range(start, min(start + 25, size)):
            item = {"pk": {"S": f"order#{n // 3}"}, "sk": {"S": f"part#{n % 3}"}}
            if n % 50 == 0:
                item["lane"] = {"S": f"lane-{n % SHARDS}"}
                item["expires"] = {"N": str(10_000 + n)}
            requests.append({"PutRequest": {"Item": item}})
        dynamodb.batch_write_item(RequestItems={table: requests})
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default="http://127.0.0.1:5142")
    parser.add_argument("--sizes", default="1000,20000,80000")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    dynamodb = client(args.endpoint)
    print("items\tpartition query median ms\tsparse index query median ms")
    for size in (int(s) for s in args.sizes.split(",")):
        table = seed(dynamodb, size)
        partition, index = [], []
        for run in range(args.runs):
            took, answer = timed(
                lambda: dynamodb.query(
                    TableName=table,
                    KeyConditionExpression="pk = :pk",
                    ExpressionAttributeValues={":pk": {"S": f"order#{run}"}},
                )
            )
            assert len(answer["Items"]) == 3, "one order's three items"
            partition.append(took)
            took, answer = timed(
                lambda: dynamodb.query(
                    TableName=table,
                    IndexName="pending",
                    KeyConditionExpression="lane = :lane AND expires < :now",
                    ExpressionAttributeValues={
                        ":lane": {"S": f"lane-{run % SHARDS}"},
                        ":now": {"N": "0"},
                    },
                )
            )
            assert answer["Items"] == [], "nothing has lapsed"
            index.append(took)
        print(
            f"{size}\t{statistics.median(partition) * 1000:.1f}"
            f"\t{statistics.median(index) * 1000:.1f}",
            flush=True,
        )
        dynamodb.delete_table(TableName=table)


if __name__ == "__main__":
    main()
