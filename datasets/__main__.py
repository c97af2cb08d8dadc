"""Command line: `python -m datasets list | fetch NAME | info NAME | verify NAME [--data-dir DIR]`.

Any DatasetError is printed as `error: <message>` on stderr with exit status 1, no traceback.
"""

import argparse
import sys

from .errors import DatasetError
from .registry import get, names
from .sources import fetch, locate, verify
from .tiny_imagenet import read_manifest


def main(argv=None):
    """Run the command line `argv` (default sys.argv[1:]); return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m datasets", description="Find, fetch and verify the project's data sets.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the known data sets and where each is found")
    for command, help_text in [
        ("fetch", "make a data set available: verify it where found, else download it"),
        ("info", "describe a data set, say where its files are and verify them"),
        ("verify", "check the sha256 of every file of a data set"),
    ]:
        sub = commands.add_parser(command, help=help_text)
        sub.add_argument("name", help=f"data set ({', '.join(names())})")
        sub.add_argument("--data-dir", help="directory holding one folder per data set")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            print_list()
        elif args.command == "fetch":
            location = fetch(args.name, args.data_dir)
            print(f"{args.name}: sha256 verified in {location.directory} ({location.source})")
        elif args.command == "info":
            print_info(args.name, args.data_dir)
        else:
            print_verify(args.name, args.data_dir)
    except DatasetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def print_list():
    """One line per registered data set: name, title, where it is found (not verified)."""
    for name in names():
        try:
            location = locate(name)
            where = f"{location.directory} ({location.source})"
        except DatasetError:
            where = f"not found (python -m datasets fetch {name})"
        print(f"{name:<15} {get(name).title:<40} {where}")


def print_info(name, data_dir):
    """The data set's description, then where each file is, its counts, and the verification."""
    dataset = get(name)
    print(f"{dataset.title} [{name}], licence {dataset.licence}")
    print(f"cite: {dataset.citation}")
    if dataset.class_names:
        print(f"classes ({len(dataset.class_names)}): {', '.join(dataset.class_names)}")
    print(f"mirrors: {' '.join(dataset.mirrors) or 'none'}")
    if dataset.archive:
        archive = dataset.archive
        print(f"archive: {archive.filename}, {archive.size:,} bytes, sha256 {archive.sha256}")
    location = verify(name, data_dir)
    print(f"found in {location.directory} ({location.source})")
    if dataset.archive:
        manifest = read_manifest(location.directory)
        for filename, path in location.files.items():
            shape = format_shape(manifest[filename]["shape"])
            print(f"  {manifest[filename]['dtype']:<6} {shape:<24} {path}")
        counts = [manifest[f"{split}-labels.npy"]["shape"][0] for split in ("train", "test")]
        print(f"{counts[0]:,} train / {counts[1]:,} test images, sha256 verified")
        return
    for spec, path in location.files.items():
        print(f"  {spec.split:<5} {spec.kind:<6}  {format_shape(spec.shape):<18} {path}")
    counts = {spec.split: spec.shape[0] for spec in dataset.files}
    print(f"{counts['train']:,} train / {counts['test']:,} test images, sha256 verified")


def print_verify(name, data_dir):
    """One line per verified file, then a summary."""
    location = verify(name, data_dir)
    if get(name).archive:
        manifest = read_manifest(location.directory)
        digests = {path: manifest[filename]["sha256"] for filename, path in location.files.items()}
    else:
        digests = {path: spec.sha256 for spec, path in location.files.items()}
    for path, digest in digests.items():
        print(f"ok  sha256 {digest[:16]}...  {path}")
    print(f"{name}: sha256 verified ({len(location.files)} files in {location.directory})")


def format_shape(shape):
    """(60000, 28, 28) -> '60,000 x 28 x 28'."""
    return " x ".join(f"{size:,}" for size in shape)


if __name__ == "__main__":
    sys.exit(main())
