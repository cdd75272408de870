"""Airflow operators: convert flat PDFs, fill one form, mail-merge a table into PDFs."""

from fillpdf_provider.operators.batch import (
    BatchFillOperator,
    check_batch_params,
    merge_manifests,
    plan_chunks,
)
from fillpdf_provider.operators.convert import ConvertOperator
from fillpdf_provider.operators.fill import FillOperator
from fillpdf_provider.operators.merge import MergeManifestsOperator

__all__ = [
    "BatchFillOperator",
    "ConvertOperator",
    "FillOperator",
    "MergeManifestsOperator",
    "check_batch_params",
    "merge_manifests",
    "plan_chunks",
]
