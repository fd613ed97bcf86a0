"""Evaluation of context policies: needle survival across compactions and the EVAL-1 metrics of a case."""
