"""compare's command line apart from its entry (compare/cli.py): the arguments' schema and help, their validation
into the report's options, and the checks of the output folder and the store made before the report is built."""
