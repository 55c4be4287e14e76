"""Rankers: the systems whose ranked lists the judges are evaluated on."""
