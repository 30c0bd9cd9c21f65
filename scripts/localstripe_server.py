"""localstripe (a Stripe API stand-in) on loopback only, with nothing kept between runs.

Why: `localstripe --port N` binds "::", which on Linux (IPV6_V6ONLY off by default) is every
interface of the machine, IPv4 included: anyone who can reach the machine could create and
confirm payments or register webhooks. Here its aiohttp application (`localstripe.server.app`,
routes and middlewares as the package builds them) is served by aiohttp's `web.run_app` on
127.0.0.1 instead; the installed package is not changed.

It also keeps no store on disk. localstripe pickles its whole store to the fixed path
/tmp/localstripe.pickle after every change (`--from-scratch` only skips reading it back at
start): every instance on the machine writes the same file, each write costs the size of the
whole store, and a file there that this user may not write (another user's) makes every POST
fail with a 500. Here `Store.try_load_from_disk` and `Store.dump_to_disk` do nothing, so each
run starts empty and lives in memory only, like the moto server beside it.

Usage: python scripts/localstripe_server.py --port 8420
"""

import argparse
import logging

from aiohttp import web
from localstripe import __version__, server
from localstripe.resources import Store


def keep_store_in_memory():
    """No reading from, and no writing to, /tmp/localstripe.pickle (see above)."""
    Store.try_load_from_disk = lambda self: None
    Store.dump_to_disk = lambda self: None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8420)
    args = parser.parse_args()
    keep_store_in_memory()
    # As localstripe's own `start()`: requests, and whether each webhook was delivered, go to
    # the `aiohttp.access` logger; here to stderr, which the local stack sends to a log file.
    logger = logging.getLogger("aiohttp.access")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(logging.StreamHandler())
    logger.info("localstripe %s on http://%s:%d", __version__, args.host, args.port)
    web.run_app(
        server.app,
        host=args.host,
        port=args.port,
        access_log=logger,
        print=None,  # the line above says where it listens
    )


if __name__ == "__main__":
    main()
