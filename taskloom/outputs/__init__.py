"""Outputs: Harbor task folders, dataset files and reports."""
