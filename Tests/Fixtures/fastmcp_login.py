"""An application's FastMCP client login, with the token store FastMCP's
docs give for one that persists: py-key-value's FileTreeStore in DIR with
its V1 sanitization strategies (nothing encrypted). The browser is $BROWSER.

usage: fastmcp_login.py URL DIR
"""
import asyncio
import sys
import warnings
from pathlib import Path

from fastmcp import Client
from fastmcp.client.auth import OAuth
from key_value.aio.stores.filetree import (
    FileTreeStore,
    FileTreeV1CollectionSanitizationStrategy,
    FileTreeV1KeySanitizationStrategy,
)


async def main(url: str, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    store = FileTreeStore(
        data_directory=directory,
        key_sanitization_strategy=FileTreeV1KeySanitizationStrategy(directory),
        collection_sanitization_strategy=FileTreeV1CollectionSanitizationStrategy(directory),
    )
    async with Client(url, auth=OAuth(mcp_url=url, token_storage=store)) as client:
        print("tools", len(await client.list_tools()))


warnings.simplefilter("ignore")
asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
