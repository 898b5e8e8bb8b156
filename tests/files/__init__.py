"""Tests of files and scale: tensor files, atomic writes, relu_file, Zarr on Dask, bad files."""
