from __future__ import annotations

import hashlib
import pickle
import random
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.data.tables import (
    DEFAULT_READ_LIMITS,
    ReadLimits,
    csv_text,
    escape_formulas,
    infer_numeric_columns,
    read_table,
    read_table_with_info,
    write_table,
)
from privdash.errors import DataReadError, ParameterError, PrivdashError, ReadLimitError
from privdash.measure.classes import equivalence_classes
from tests.badfiles import write_corpus


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


# ------------------------------------------------------------------------------------------- reliability of reading


def test_integers_beyond_int64_stay_exact_and_distinct() -> None:
    big = [str(10**29 + i) for i in range(100)]
    raw = ("id,group\n" + "".join(f"{value},{i % 2}\n" for i, value in enumerate(big))).encode()
    frame, info = read_table_with_info(raw, filename="ids.csv")
    assert frame["id"].tolist() == big  # text, exact (int64 overflow made them all -9223372036854775808)
    classes = equivalence_classes(frame, ["id"])
    assert classes.n_classes == 100 and classes.k == 1
    assert any("'id' holds integers outside the 64-bit range" in note for note in info.notes)
    edges = read_table(b"x,y\n9223372036854775807,1\n-9223372036854775808,2\n", filename="edges.csv")
    assert edges["x"].dtype == np.int64 and edges["x"].tolist() == [2**63 - 1, -(2**63)]
    over = read_table(b"x,y\n9223372036854775808,1\n1,2\n", filename="over.csv")
    assert over["x"].tolist() == ["9223372036854775808", "1"]
    # with a missing value the column would be float64: 16 digits would round, so the ids stay text
    ids = read_table(b"id,y\n1234567890123456,1\n,2\n1234567890123457,3\n", filename="ids.csv")
    assert ids["id"].tolist()[::2] == ["1234567890123456", "1234567890123457"]
    small = read_table(b"n,y\n12,1\n,2\n", filename="small.csv")
    assert small["n"].dtype == np.float64 and small["n"].tolist()[0] == 12.0


def test_infinities_overflow_and_lost_digits_never_merge_distinct_texts() -> None:
    frame, info = read_table_with_info(b"x,y\ninf,1\n1e999,2\n-inf,3\nInfinity,4\n1.5,5\n", filename="inf.csv")
    assert frame["x"].tolist() == ["inf", "1e999", "-inf", "Infinity", "1.5"]
    assert equivalence_classes(frame, ["x"]).n_classes == 5  # inf, 1e999 and Infinity were one value
    assert any("infinite or overflowing" in note for note in info.notes)
    assert read_table(b"x,y\n1e999,1\n2e999,2\n", filename="o.csv")["x"].tolist() == ["1e999", "2e999"]
    digits = read_table(b"x,y\n0.1234567890123456789,1\n0.1234567890123456788,2\n", filename="d.csv")
    assert digits["x"].nunique() == 2
    underflow = read_table(b"x,y\n1e-400,1\n0,2\n", filename="u.csv")
    assert underflow["x"].tolist() == ["1e-400", "0"]
    # Numbers a float gives back unchanged stay numbers, whatever their spelling or size.
    floats = read_table(
        b"x,y\n0.30000000000000004,1\n1.7976931348623157e308,2\n-2.5E-3,3\n5e-324,4\n1.50,5\n", filename="f.csv"
    )
    assert floats["x"].dtype == np.float64
    assert floats["x"].tolist() == [0.30000000000000004, 1.7976931348623157e308, -0.0025, 5e-324, 1.5]
    whole = read_table(b"x,y\n1.0,1\n2,2\n1e3,3\n", filename="w.csv")
    assert whole["x"].dtype == np.int64 and whole["x"].tolist() == [1, 2, 1000]
    assert infer_numeric_columns(pd.DataFrame({"x": ["1", "2"], "y": ["a", "1"]})).dtypes.tolist()[0] == np.int64


def test_a_nul_byte_anywhere_means_binary() -> None:
    table = b"id,town\n" + b"".join(b"%d,town%d\n" % (i, i % 10) for i in range(100_000))
    assert len(table) > 1 << 20
    assert read_table(table, filename="t.csv").shape == (100_000, 2)
    with pytest.raises(DataReadError, match=f"NUL bytes, the first at byte {len(table) + 7:,}"):
        read_table(table + b"100000,\x00\n", filename="t.csv")  # after the first megabyte (was kept as a value)
    utf16 = "a,b\nx,1\ny,2\n".encode("utf-16")
    assert read_table(utf16, filename="u.csv")["a"].tolist() == ["x", "y"]
    with pytest.raises(DataReadError, match="NUL characters"):
        read_table("a,b\nx,\x00\n".encode("utf-16"), filename="u.csv")


def _workbook(path: Path, sheets: dict[str, list[list[object]]]) -> Path:
    from openpyxl import Workbook

    book = Workbook()
    for number, (title, rows) in enumerate(sheets.items()):
        sheet = book.active if number == 0 else book.create_sheet()
        assert sheet is not None
        sheet.title = title
        for row in rows:
            sheet.append(row)
    book.save(path)
    return path


def _patched(path: Path, target: Path, old: bytes, new: bytes, member: str = "xl/worksheets/sheet1.xml") -> Path:
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == member:
                assert old in content
                content = content.replace(old, new)
            out.writestr(info.filename, content)
    return target


def test_formulas_without_saved_results_are_refused(tmp_path: Path) -> None:
    rows = [["a", "b", "total"], *[[i, 2 * i, f"=A{i + 2}+B{i + 2}"] for i in range(3)]]
    written = _workbook(tmp_path / "f.xlsx", {"data": rows})  # openpyxl saves no results: read as all missing
    with pytest.raises(DataReadError, match=r"column 'total' \(C\) holds formulas without a saved result"):
        read_table(written)
    calculated = _patched(written, tmp_path / "c.xlsx", b"<v />", b"<v>0</v>")  # XlsxWriter's placeholders
    with pytest.raises(DataReadError, match="placeholders"):
        read_table(calculated)
    # Saved by a spreadsheet program: results present and no recalculation flag; an empty text result is a value.
    saved = _patched(calculated, tmp_path / "s.xlsx", b' fullCalcOnLoad="1"', b"", member="xl/workbook.xml")
    saved = _patched(
        saved, tmp_path / "e.xlsx", b'<c r="C2"><f>A2+B2</f><v>0</v></c>', b'<c r="C2" t="str"><f>""</f><v></v></c>'
    )
    frame = read_table(saved)
    assert frame["total"].isna().tolist() == [True, False, False]
    assert frame["a"].tolist() == [0, 1, 2]


def test_sheets_are_listed_chosen_and_noted(tmp_path: Path) -> None:
    path = _workbook(
        tmp_path / "s.xlsx",
        {"people": [["a", "b"], [1, "x"], [2, "y"]], "Codes": [["code", "label"], [7, "seven"], [8, "eight"]]},
    )
    frame, info = read_table_with_info(path)
    assert frame.columns.tolist() == ["a", "b"] and info.sheet == "people" and info.sheets == ("people", "Codes")
    assert info.notes == ("s.xlsx has 2 sheets; the first, 'people', was read. Not read: 'Codes'. "
                          "Choose a sheet to read another.",)  # fmt: skip
    for choice in ("Codes", "codes", 1):
        frame, info = read_table_with_info(path, sheet=choice)
        assert frame["label"].tolist() == ["seven", "eight"] and info.sheet == "Codes" and info.notes == ()
    with pytest.raises(DataReadError, match=r"no sheet 'Code'\. Did you mean 'Codes'\? Its sheets: 'people', 'Codes'"):
        read_table(path, sheet="Code")
    with pytest.raises(DataReadError, match="no sheet at position 2"):
        read_table(path, sheet=2)
    with pytest.raises(DataReadError, match="not an Excel workbook, so it has no sheet"):
        read_table(b"a,b\n1,2\n", filename="t.csv", sheet="people")


def test_excel_cells_keep_their_types(tmp_path: Path) -> None:
    path = _workbook(
        tmp_path / "t.xlsx",
        {"t": [["zip", "n", "label", None], ["02134", 1, "NA", None], ["10001", None, "x", None], [None] * 4,
               ["02134", 3, "y", None]]},
    )  # fmt: skip
    frame = read_table(path)
    assert frame.columns.tolist() == ["zip", "n", "label"]  # trailing empty column and the empty row dropped
    assert frame["zip"].tolist() == ["02134", "10001", "02134"]  # pandas' read_excel gave 2134
    assert frame["n"].tolist()[::2] == [1.0, 3.0] and frame["label"].isna().tolist() == [True, False, False]


def test_parquet_nested_and_duplicate_columns_are_named(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1, 2], "tags": [["a"], ["b"]], "where": [{"c": 1}, {"c": 2}]}), tmp_path / "n.pq")
    with pytest.raises(DataReadError, match=r"nested columns.*'tags' \(list<element: string>\), 'where' \(struct<c"):
        read_table(tmp_path / "n.pq")
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3]), pa.array([4])], ["a", "b", "a", "b"])
    pq.write_table(table, tmp_path / "d.parquet")
    with pytest.raises(DataReadError, match=r"duplicate column names: 'a' \(2 times\), 'b' \(2 times\);") as error:
        read_table(tmp_path / "d.parquet")
    assert "\n" not in str(error.value) and "__fragment_index" not in str(error.value)


def test_wide_rows_and_repeated_names_never_shift_values() -> None:
    with pytest.raises(DataReadError, match="line 2 has 3 fields but the header has 2"):
        read_table(b"a,b\n1,2,3\n4,5,6\n", filename="r.csv")  # pandas took 'a' as an index: values shifted
    frame, info = read_table_with_info(b"a ,a,,b\n1,2,3,4\n5,6,7,8\n", filename="n.csv")
    assert frame.columns.tolist() == ["a", "a.1", "Unnamed: 2", "b"]
    assert frame["a.1"].tolist() == [2, 6] and len(info.notes) == 2


# ------------------------------------------------------------------------------------------------------ read limits


def test_read_limits_validate_and_cite_their_settings() -> None:
    assert ReadLimits() == DEFAULT_READ_LIMITS
    assert DEFAULT_READ_LIMITS.max_rows is None and DEFAULT_READ_LIMITS.max_seconds is None
    assert DEFAULT_READ_LIMITS.max_decompressed_bytes == 1 << 30
    assert hash(ReadLimits(max_rows=5, setting_names={"max_rows": "X"})) == hash(ReadLimits(max_rows=5))
    for bad in ({"max_rows": 0}, {"max_cells": 2.5}, {"max_columns": True}, {"max_seconds": 0}, {"max_seconds": "1"}):
        with pytest.raises(ParameterError, match="ReadLimits"):
            ReadLimits(**bad)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="unknown limits 'max_lines'"):
        ReadLimits(setting_names={"max_lines": "X"})
    limits = ReadLimits(max_cells=20_000_000, setting_names={"max_cells": "PRIVDASH_MAX_CELLS"})
    error = limits.exceeded("max_cells", "big.csv", 30_000_000)
    assert str(error) == "big.csv has 30,000,000 cells, over the limit of 20,000,000 cells (PRIVDASH_MAX_CELLS)."
    assert (error.limit, error.found, error.maximum, error.setting) == ("max_cells", 30_000_000, 20_000_000,
                                                                        "PRIVDASH_MAX_CELLS")  # fmt: skip
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, ReadLimitError) and str(copy) == str(error) and copy.setting == "PRIVDASH_MAX_CELLS"


def test_csv_limits_stop_the_parse_before_the_rest_of_the_file() -> None:
    # Rows after the limit are never parsed: a broken row further down does not matter.
    good = b"a,b\n" + b"".join(b"%d,%d\n" % (i, i) for i in range(2_000))
    broken = good + b'1,"never closed\n'
    with pytest.raises(DataReadError, match="never closed"):
        read_table(broken, filename="b.csv")
    with pytest.raises(ReadLimitError, match=r"more than 1,000 rows, over the limit of 1,000 rows \(ROWS\)"):
        read_table(broken, filename="b.csv", limits=ReadLimits(max_rows=1_000, setting_names={"max_rows": "ROWS"}))
    with pytest.raises(ReadLimitError, match="more than 100 cells"):
        read_table(broken, filename="b.csv", limits=ReadLimits(max_cells=100))
    assert read_table(good, filename="g.csv", limits=ReadLimits(max_rows=2_000, max_cells=4_000)).shape == (2_000, 2)
    # Columns are counted from the header, before a row is parsed.
    wide = (",".join(f"c{i}" for i in range(5_000)) + "\n" + "1" * 10 + ",2,3\n").encode()
    with pytest.raises(ReadLimitError, match=r"has 5,000 columns, over the limit of 4,999 columns\.$"):
        read_table(wide, filename="w.csv", limits=ReadLimits(max_columns=4_999))
    # The time limit is checked between chunks of the parse.
    with pytest.raises(ReadLimitError, match="took more than 1e-09 seconds") as error:
        read_table(good, filename="g.csv", limits=ReadLimits(max_seconds=1e-9))
    assert error.value.limit == "max_seconds"


def test_excel_limits_are_checked_while_streaming_and_before_decompressing(tmp_path: Path) -> None:
    rows = [["a", "b"], *[[i, i % 3] for i in range(3_000)]]
    path = _workbook(tmp_path / "big.xlsx", {"data": rows})
    # Row 2,500 points at a shared string that does not exist: reading it fails, unless reading stopped earlier.
    broken = _patched(path, tmp_path / "broken.xlsx", b'<c r="A2500" t="n"><v>2498</v>', b'<c r="A2500" t="s"><v>999')
    with pytest.raises(DataReadError, match="could not be read"):
        read_table(broken)
    with pytest.raises(ReadLimitError, match="more than 1,000 rows"):
        read_table(broken, limits=ReadLimits(max_rows=1_000))
    with pytest.raises(ReadLimitError, match="more than 1,000 cells"):
        read_table(broken, limits=ReadLimits(max_cells=1_000))  # from the sheet's XML, before parsing
    with pytest.raises(ReadLimitError, match="more than 1 columns"):
        read_table(path, limits=ReadLimits(max_columns=1))
    with pytest.raises(ReadLimitError, match="took more than"):
        read_table(path, limits=ReadLimits(max_seconds=1e-9))
    assert read_table(path, limits=ReadLimits(max_rows=3_000, max_columns=2, max_cells=6_000)).shape == (3_000, 2)
    # The declared sizes are checked before decompressing: an entry whose data is not even valid deflate.
    content = path.read_bytes()
    limit = ReadLimits(max_decompressed_bytes=10_000)
    with pytest.raises(
        ReadLimitError, match=r"big\.xlsx expands to .* when decompressed, over the limit of 10,000 bytes"
    ):
        read_table(content, filename="big.xlsx", limits=limit)


def test_parquet_limits_come_from_the_metadata(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": list(range(1_000)), "b": ["x"] * 1_000}), path, row_group_size=100)
    raw = bytearray(path.read_bytes())
    raw[200:260] = bytes(60)  # damage a data page; the footer (metadata) is intact
    with pytest.raises(DataReadError, match="could not be read as a Parquet file"):
        read_table(bytes(raw), filename="t.parquet")
    with pytest.raises(ReadLimitError, match=r"has 1,000 rows, over the limit of 999 rows"):
        read_table(bytes(raw), filename="t.parquet", limits=ReadLimits(max_rows=999))
    with pytest.raises(ReadLimitError, match=r"has 2,000 cells"):
        read_table(bytes(raw), filename="t.parquet", limits=ReadLimits(max_cells=1_999))
    with pytest.raises(ReadLimitError, match=r"has 2 columns"):
        read_table(bytes(raw), filename="t.parquet", limits=ReadLimits(max_columns=1))
    with pytest.raises(ReadLimitError, match="when decompressed"):
        read_table(bytes(raw), filename="t.parquet", limits=ReadLimits(max_decompressed_bytes=100))
    with pytest.raises(ReadLimitError, match="took more than"):
        read_table(path, limits=ReadLimits(max_seconds=1e-9))


# -------------------------------------------------------------------------------------------------- the bad corpus


def test_every_bad_file_through_the_reader(tmp_path: Path) -> None:
    """The corpus of tests/badfiles.py through the Python API, limited cases included: the stated error, or the
    stated shape, columns, values, notes and classes."""
    failures = []
    for case in write_corpus(tmp_path):
        if case.dataset or (case.engine is not None and case.error is not None):
            continue  # a folder of Parquet files, or an engine's refusal: only the engines (tests/integration/cli)
        try:
            frame, info = read_table_with_info(case.path, sheet=case.sheet, limits=case.limits)
        except DataReadError as exc:
            if case.error is None or not re.search(case.error, str(exc)):
                failures.append(f"{case.name}: {type(exc).__name__}: {exc}")
            continue
        if case.error is not None:
            failures.append(f"{case.name}: read, expected an error matching {case.error!r}")
            continue
        found = []
        if case.shape is not None and frame.shape != case.shape:
            found.append(f"shape {frame.shape}")
        if case.columns is not None and tuple(frame.columns[: len(case.columns)]) != case.columns:
            found.append(f"columns {frame.columns[:5].tolist()}")
        for column, expected in case.values.items():
            got = [None if pd.isna(value) else value for value in frame[column].tolist()[: len(expected)]]
            if got != list(expected):
                found.append(f"{column} = {got}")
        if case.note is not None and not any(re.search(case.note, note) for note in info.notes):
            found.append(f"notes {info.notes}")
        if case.k is not None:
            classes = equivalence_classes(frame, [case.quasi_identifier])
            if (classes.k, classes.n_classes) != (case.k, case.classes):
                found.append(f"k {classes.k}, {classes.n_classes} classes")
        if found:
            failures.append(f"{case.name}: {'; '.join(found)}")
    assert not failures, "\n".join(failures)


def test_damaged_copies_of_the_corpus_never_crash(tmp_path: Path) -> None:
    """Seeded damage (bytes overwritten, inserted or removed, files cut) to the corpus's workbooks, Parquet and CSV
    files: every read ends in a table or a PrivdashError, within the time limit, never another exception."""
    rng = random.Random(11)
    seeds = [
        case.path.read_bytes()
        for case in write_corpus(tmp_path)
        if case.upload and case.path.is_file() and 0 < case.path.stat().st_size < 100_000
    ]
    names = ("t.xlsx", "t.parquet", "t.csv")
    failures = []
    for trial in range(300):
        data = bytearray(rng.choice(seeds))
        position = rng.randrange(len(data))
        kind = trial % 4
        if kind == 0:
            data[position : position + 4] = bytes(rng.randrange(256) for _ in range(4))
        elif kind == 1:
            del data[position:]
        elif kind == 2:
            data[position:position] = bytes(rng.randrange(256) for _ in range(8))
        else:
            del data[position : position + 16]
        name = names[trial % 3] if trial % 2 else "upload"  # by extension, or by content alone
        try:
            read_table(bytes(data), filename=name, limits=ReadLimits(max_seconds=10))
        except PrivdashError:
            pass
        except Exception as exc:  # any other exception is the failure this test looks for
            failures.append(f"trial {trial} ({name}): {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)
