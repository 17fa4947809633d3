"""CLI sub-commands. Each module defines NAME, HELP, add_arguments(parser) and run(args) -> int."""
