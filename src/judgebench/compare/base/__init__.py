"""The shared base of the compare report: what a report is, the Section protocol, names, references, run artifacts,
Tables 1 and 2 and the Finding record; sections import it, and it imports no section."""
