"""Bundled datasets: counts, equality with the real sources, and the load-time budget's shape."""

from __future__ import annotations

import gzip

import pytest

from hoibench import ConfigError
from hoibench.datasets import bundled_path, list_datasets, load_dataset, resolve_dataset
from hoibench.formats import read_dataset
from tests.conftest import shared_file


def test_bundled_hico_det_counts():
    train = load_dataset("hico-det:train")
    test = load_dataset("hico-det", "test")
    assert (train.n_images, train.n_pairs) == (38_118, 117_654)
    assert (test.n_images, test.n_pairs) == (9_658, 33_405)
    both = load_dataset("hico-det")
    assert both.n_images == 47_776 and both.n_pairs == 151_059
    assert both.file_names[0].startswith("HICO_train2015") and both.file_names[-1].startswith("HICO_test2015")


def test_bundled_vcoco_counts():
    assert load_dataset("v-coco:test").n_pairs == 12_402
    assert load_dataset("vcoco:trainval").n_images == 5_400


def test_bundled_train_equals_hake_source():
    hake = read_dataset(shared_file("hico-det/hake/hico-det-instance-level.tar.gz"))
    assert load_dataset("hico-det:train").differences(hake) == []


def test_bundled_test_is_the_toolkit_file_unchanged():
    src = shared_file("hico-det/instances_test2015.json").read_bytes()
    assert gzip.decompress(bundled_path("hico-det", "test").read_bytes()) == src


def test_names_and_errors(tmp_path):
    assert "hico-det:test" in list_datasets()
    with pytest.raises(ConfigError, match="Did you mean 'hico-det'"):
        load_dataset("hico-dte")
    with pytest.raises(ConfigError, match="has splits"):
        load_dataset("hico-det:val")
    assert resolve_dataset("hico-det:test").n_images == 9_658
