from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.core.data.tables import csv_text, escape_formulas, read_table, read_table_with_info, write_table
from dashboard.core.errors import DataReadError


def test_adult_semicolon_file(data_dir: Path) -> None:
    path = data_dir / "arx_adult" / "adult.csv"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    frame, info = read_table_with_info(path)
    assert frame.shape == (30162, 9)
    assert info.delimiter == ";" and info.encoding == "utf-8" and info.format == "csv"
    assert frame.columns[0] == "sex" and frame.columns[-1] == "salary-class"
    assert pd.api.types.is_integer_dtype(frame["age"])
    assert frame["age"].min() == 17 and frame["age"].max() == 90
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_sdcmicro_testdata_comma_file(data_dir: Path) -> None:
    frame = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    assert frame.shape == (4580, 15)
    assert pd.api.types.is_integer_dtype(frame["urbrur"])
    assert pd.api.types.is_float_dtype(frame["income"])


@pytest.mark.parametrize(("delimiter", "name"), [("\t", "t.tsv"), ("|", "p.txt"), (";", "s.csv"), (",", "c.csv")])
def test_delimiters(delimiter: str, name: str) -> None:
    text = delimiter.join(["a", "b", "c"]) + "\n" + "\n".join(delimiter.join(["x", str(i), "1.5"]) for i in range(5))
    frame = read_table(text.encode(), filename=name)
    assert list(frame.columns) == ["a", "b", "c"]
    assert frame["b"].tolist() == [0, 1, 2, 3, 4]
    assert frame["c"].tolist() == [1.5] * 5


def test_latin1_and_bom() -> None:
    latin = "ville;code\nMontréal;1\nQuébec;2\n".encode("latin-1")
    frame, info = read_table_with_info(latin, filename="x.csv")
    assert frame["ville"].tolist() == ["Montréal", "Québec"]
    assert info.encoding != "utf-8"
    bom = "\ufeffa,b\n1,2\n".encode()
    assert list(read_table(bom, filename="b.csv").columns) == ["a", "b"]


def test_leading_zeros_and_missing_markers_kept_as_text() -> None:
    frame = read_table(b"zip,n,flag\n02134,1,NA\n10001,,yes\n", filename="z.csv")
    assert frame["zip"].tolist() == ["02134", "10001"]
    assert frame["n"].isna().tolist() == [False, True]
    assert frame["flag"].isna().tolist() == [True, False]


def test_excel_and_parquet_round_trip(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": ["x", "y", None], "b": [1, 2, 3], "c": [0.5, np.nan, 2.0]})
    frame.to_excel(tmp_path / "t.xlsx", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    for name in ("t.xlsx", "t.parquet"):
        back = read_table(tmp_path / name)
        assert back["a"].tolist()[:2] == ["x", "y"] and pd.isna(back["a"].iloc[2])
        assert back["b"].tolist() == [1, 2, 3]
    # format from content when the name has no extension
    assert read_table((tmp_path / "t.parquet").read_bytes(), filename="upload").shape == (3, 3)


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        (b"", "e.csv", "is empty"),
        (b"   \n\n", "e.csv", "is empty"),
        (b"a,b,c\n", "h.csv", "no data rows"),
        (b"\x00\x01\x02binary\x00", "bin.csv", "looks binary"),
        (b"only\n1\n2\n", "one.csv", "single column"),
        (b"a;b\n;\n;\n", "m.csv", "every value is missing"),
        (b"not parquet", "x.parquet", "Parquet"),
        (b"PK\x03\x04 not a workbook", "x.xlsx", "Excel"),
        (b"a,b\n1,2\n", "old.xls", ".xls"),
    ],
)
def test_bad_files_have_specific_messages(content: bytes, name: str, message: str) -> None:
    with pytest.raises(DataReadError, match=message):
        read_table(content, filename=name)


def test_single_column_message_names_the_delimiter() -> None:
    with pytest.raises(DataReadError, match="delimiter"):
        read_table(b"a b c\n1 2 3\n4 5 6\n", filename="spaces.csv")


def test_size_limit_and_paths(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("a,b\n" + "1,2\n" * 1000)
    with pytest.raises(DataReadError, match="over the"):
        read_table(path, max_bytes=100)
    with pytest.raises(DataReadError, match="over the"):
        read_table(path.read_bytes(), filename="big.csv", max_bytes=100)
    with pytest.raises(DataReadError, match="not found"):
        read_table(tmp_path / "absent.csv")
    with pytest.raises(DataReadError, match="folder"):
        read_table(tmp_path)


def test_write_table_refuses_to_overwrite_input(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("a,b\n1,2\n")
    frame = read_table(source)
    with pytest.raises(DataReadError, match="overwrite"):
        write_table(frame, source, overwrite_protect=[source])
    assert source.read_text() == "a,b\n1,2\n"
    out = write_table(frame, tmp_path / "out.parquet")
    assert read_table(out).equals(frame)
    with pytest.raises(DataReadError, match="csv"):
        write_table(frame, tmp_path / "out.json")


def test_exports_escape_formula_cells(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "text": ["=1+1", "@SUM(A1)", "+49 30", "-2+3", "\tx", "\rx", "plain", None],
            "number": [-1, 2, -3, 4, 5, 6, 7, 8],
            "=name": ["a"] * 8,
        }
    )
    escaped = escape_formulas(frame)
    assert escaped["text"].tolist()[:7] == ["'=1+1", "'@SUM(A1)", "'+49 30", "'-2+3", "'\tx", "'\rx", "plain"]
    assert escaped["text"].isna().tolist()[-1]
    assert escaped["number"].tolist() == frame["number"].tolist()  # numbers stay numbers
    assert list(escaped.columns) == ["text", "number", "'=name"]
    assert frame["text"].tolist()[0] == "=1+1"  # the input is untouched
    csv_path, parquet_path, raw_path = tmp_path / "a.csv", tmp_path / "a.parquet", tmp_path / "raw.tsv"
    write_table(frame, csv_path)
    assert pd.read_csv(csv_path)["text"].tolist()[0] == "'=1+1"
    write_table(frame, parquet_path)  # a typed format: written as it is
    assert pd.read_parquet(parquet_path)["text"].tolist()[0] == "=1+1"
    write_table(frame, raw_path, escape_formulas=False)
    assert pd.read_csv(raw_path, sep="\t")["text"].tolist()[0] == "=1+1"
    assert csv_text(frame).splitlines()[1].startswith("'=1+1,")
