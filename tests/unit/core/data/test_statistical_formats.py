"""SPSS (.sav, .zsav), Stata (.dta) and SAS (.sas7bdat, .xpt) files through the table reader.

Files are written here with pyreadstat (which cannot write .sas7bdat: that one is a small real file from the haven
package, tests/data/README.md), read back, and compared with what was written: value labels applied, declared
missing values mapped to missing and counted, dates typed as an Excel workbook's dates are, the reading limits
checked from the metadata, damaged files refused with a specific message.
"""

from __future__ import annotations

import datetime as dt
import io
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from privdash.data.tables import ReadLimits, read_table, read_table_with_info
from privdash.errors import DataReadError, ParameterError, ReadLimitError
from privdash.measure.diagnose import diagnose

DATA = Path(__file__).resolve().parents[3] / "data"


def written(tmp_path: Path, name: str, frame: pd.DataFrame, **options: object) -> Path:
    """``frame`` written to ``tmp_path / name`` by the pyreadstat writer of the extension."""
    writer = {".sav": "write_sav", ".zsav": "write_sav", ".dta": "write_dta", ".xpt": "write_xport"}
    path = tmp_path / name
    if path.suffix == ".zsav":
        options["compress"] = True
    getattr(pyreadstat, writer[path.suffix])(frame, str(path), **options)
    return path


def values(column: pd.Series) -> list[object]:
    return [None if pd.isna(value) else value for value in column.tolist()]


def set_ncases(path: Path, rows: int) -> bytes:
    """An SPSS file's bytes with the case count of its header (offset 80, little-endian) replaced."""
    raw = bytearray(path.read_bytes())
    raw[80:84] = rows.to_bytes(4, "little", signed=True)
    return bytes(raw)


# ------------------------------------------------------------------------------------------------- SPSS and Stata


SURVEY = pd.DataFrame(
    {
        "region": [1.0, 2.0, 3.0, 9.0, 1.0, np.nan, 2.0],
        "income": [1200.5, 98.0, 99.0, 2500.0, np.nan, 310.25, 700.0],
        "sex": ["f", "m", "x", "", "f", "m", "f"],
        "size": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    }
)
SURVEY_LABELS = {"region": {1: "north", 2: "south", 9: "refused"}, "sex": {"f": "female", "m": "male"}}
SURVEY_MISSING = {"region": [9], "income": [{"lo": 98, "hi": 99}], "sex": ["x"]}


@pytest.mark.parametrize("name", ["survey.sav", "survey.zsav"])
def test_spss_labels_user_missing_and_ranges(tmp_path: Path, name: str) -> None:
    path = written(tmp_path, name, SURVEY, variable_value_labels=SURVEY_LABELS, missing_ranges=SURVEY_MISSING)
    frame, info = read_table_with_info(path)
    assert info.format == "spss" and info.encoding == "UTF-8"
    assert list(frame.columns) == ["region", "income", "sex", "size"]
    # 3 has no label: kept, as text; 9 is a user-defined missing code (its label does not apply).
    assert values(frame["region"]) == ["north", "south", "3", None, "north", None, "south"]
    assert values(frame["income"]) == [1200.5, None, None, 2500.0, None, 310.25, 700.0]
    assert values(frame["sex"]) == ["female", "male", None, None, "female", "male", "female"]
    assert frame["size"].dtype == np.int64 and frame["size"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert frame["income"].dtype == np.float64 and pd.api.types.is_string_dtype(frame["region"])
    assert info.notes == (
        f"{name}: the value labels of 'region', 'sex' were applied: those columns hold the labels in place of the "
        "codes. Codes without a label were kept as they are, as text (values: 'region' (1)).",
        f"{name}: 7 values the file marks as missing were read as missing: 2 system-missing values (.) in "
        "'region' (1), 'income' (1); 4 user-defined missing values in 'region' (1), 'income' (2), 'sex' (1); "
        "1 empty text in 'sex' (1).",
    )


def test_codes_sharing_a_label_become_one_value_with_a_note(tmp_path: Path) -> None:
    frame = pd.DataFrame({"answer": [1.0, 2.0, 3.0, 4.0], "n": [1.0, 2.0, 3.0, 4.0]})
    path = written(tmp_path, "merge.sav", frame, variable_value_labels={"answer": {1: "yes", 2: "yes", 3: "4"}})
    read, info = read_table_with_info(path)
    assert read["answer"].tolist() == ["yes", "yes", "4", "4"]
    assert "merge.sav: in 'answer', the codes '1', '2' became the one value 'yes' (and 1 more value likewise)." in (
        info.notes
    )


def test_labels_that_name_no_present_value_leave_the_column_numeric(tmp_path: Path) -> None:
    frame = pd.DataFrame({"age": [30.0, 41.0, 99.0], "n": [1.0, 2.0, 3.0]})
    path = written(
        tmp_path, "age.sav", frame, variable_value_labels={"age": {99: "refused"}}, missing_ranges={"age": [99]}
    )
    read, info = read_table_with_info(path)
    assert read["age"].dtype == np.float64 and values(read["age"]) == [30.0, 41.0, None]
    assert not any("value labels" in note for note in info.notes)


@pytest.mark.parametrize("version", [15, 12])
def test_stata_labels_and_extended_missing_values(tmp_path: Path, version: int) -> None:
    """Stata 14+ (format 118, an XML-like header) and Stata 12 (format 115, a binary header)."""
    frame = pd.DataFrame(
        {
            "county": [1, 2, "a", 2, 1, 3],
            "income": [10.5, "z", 8.0, np.nan, 12.0, 9.5],
            "town": ["p", "p", "q", "", "r", "q"],
        },
        dtype=object,
    )
    path = written(
        tmp_path,
        "tagged.dta",
        frame,
        version=version,
        variable_value_labels={"county": {1: "Kent", 2: "Essex"}},
        missing_user_values={"county": ["a"], "income": ["z"]},
    )
    read, info = read_table_with_info(path)
    assert info.format == "stata"
    assert values(read["county"]) == ["Kent", "Essex", None, "Essex", "Kent", "3"]
    assert values(read["income"]) == [10.5, None, 8.0, None, 12.0, 9.5]
    assert values(read["town"]) == ["p", "p", "q", None, "r", "q"]  # Stata's rule: an empty text is missing
    assert info.notes[-1] == (
        "tagged.dta: 4 values the file marks as missing were read as missing: 1 system-missing value (.) in "
        "'income' (1); 2 extended missing values (.a to .z) in 'county' (1), 'income' (1); 1 empty text in 'town' (1)."
    )


def test_sas_transport_files_v5_and_v8(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1.0, 2.5, np.nan], "b": ["x", "y", "x"], "c": [4.0, 5.0, 6.0]})
    for version in (5, 8):
        path = written(tmp_path, f"v{version}.xpt", frame, file_format_version=version)
        read, info = read_table_with_info(path)
        assert info.format == "xport"
        assert values(read["a"]) == [1.0, 2.5, None] and read["b"].tolist() == ["x", "y", "x"]
        assert read["c"].dtype == np.int64 and read["c"].tolist() == [4, 5, 6]


def test_dates_are_typed_as_excel_dates_are(tmp_path: Path) -> None:
    """Dates and date-times are datetime64 as a workbook's date cells are read, times of day ``datetime.time``."""
    from openpyxl import Workbook

    days = [dt.date(2020, 1, 31), dt.date(1583, 1, 1), dt.date(2024, 2, 29)]
    moments = [dt.datetime(2020, 1, 31, 10, 5, 7), dt.datetime(1960, 1, 1), dt.datetime(2024, 2, 29, 23, 59, 59)]
    times = [dt.time(10, 5, 7), dt.time(0, 0), dt.time(23, 59, 59)]
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["day", "moment", "time"])
    for row in zip(days, moments, times, strict=True):
        sheet.append(list(row))
    buffer = io.BytesIO()
    book.save(buffer)
    excel = read_table(buffer.getvalue(), filename="dates.xlsx")
    frame = pd.DataFrame({"day": days, "moment": moments, "time": times})
    for name in ("dates.sav", "dates.dta", "dates.xpt"):
        read = read_table(written(tmp_path, name, frame))
        assert read.dtypes.to_dict() == excel.dtypes.to_dict(), name
        pd.testing.assert_frame_equal(read, excel, check_dtype=True)


def test_a_real_sas7bdat_file_reads_the_values_its_source_states() -> None:
    """haven's datetime.sas7bdat: the first row haven's test states (see tests/data/README.md)."""
    frame, info = read_table_with_info(DATA / "datetime.sas7bdat")
    assert info.format == "sas7bdat" and frame.shape == (4, 5)
    assert list(frame.columns) == ["VAR1", "VAR2", "VAR3", "VAR4", "VAR5"]
    first = frame.iloc[0]
    assert first["VAR1"] == pd.Timestamp(2015, 2, 2, 14, 42, 12)
    assert first["VAR2"] == first["VAR3"] == first["VAR4"] == pd.Timestamp(2015, 2, 2)
    assert first["VAR5"] == dt.time(14, 42, 12)  # hms::hms(52932)
    assert all(frame[name].dtype == "datetime64[us]" for name in ("VAR1", "VAR2", "VAR3", "VAR4"))
    # The content decides, whatever the name; a name with another extension gets a note.
    raw = (DATA / "datetime.sas7bdat").read_bytes()
    pd.testing.assert_frame_equal(read_table(raw), frame)
    _, renamed = read_table_with_info(raw, filename="dates.csv")
    assert renamed.notes == (
        "dates.csv is a SAS data set (.sas7bdat) despite its extension '.csv'; it was read as a SAS data set "
        "(.sas7bdat).",
    )


# --------------------------------------------------------------------------------------- a real dataset, labelled


def labelled_adult(adult: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, dict[float, str]]]:
    """Adult with each text column as numeric codes (1, 2 ... in sorted order), and the labels of the codes."""
    renamed = adult.rename(columns=lambda name: name.replace("-", "_"))  # SPSS names have no hyphens
    coded = renamed.copy()
    labels: dict[str, dict[float, str]] = {}
    for name in renamed.columns:
        if name == "age":
            continue
        categories = sorted(renamed[name].unique())
        coded[name] = renamed[name].map({category: float(i + 1) for i, category in enumerate(categories)})
        labels[name] = {float(i + 1): category for i, category in enumerate(categories)}
    return coded, labels


def test_a_labelled_spss_adult_diagnoses_as_the_csv_does(tmp_path: Path, adult: pd.DataFrame) -> None:
    """The SPSS version of Adult, every text column coded and labelled, reads as the CSV does, and diagnoses the
    same; with three intended changes (a code left without its label, a user-defined missing code, a missing range
    over ages) it diagnoses as the CSV with the same three changes made."""
    coded, labels = labelled_adult(adult)
    csv = adult.rename(columns=lambda name: name.replace("-", "_"))
    qis = ["sex", "age", "race", "marital_status", "education"]
    sensitive = ["salary_class", "occupation"]

    exact = written(tmp_path, "adult.sav", coded.assign(age=coded["age"].astype(float)), variable_value_labels=labels)
    read = read_table(exact)
    pd.testing.assert_frame_equal(read, csv)
    assert diagnose(exact, qis, sensitive=sensitive).to_dict() == diagnose(csv, qis, sensitive=sensitive).to_dict()

    female = next(code for code, label in labels["sex"].items() if label == "Female")
    preschool = next(code for code, label in labels["education"].items() if label == "Preschool")
    changed_labels = {**labels, "sex": {code: label for code, label in labels["sex"].items() if code != female}}
    changed = written(
        tmp_path,
        "adult_changed.sav",
        coded.assign(age=coded["age"].astype(float)),
        variable_value_labels=changed_labels,
        missing_ranges={"education": [preschool], "age": [{"lo": 90, "hi": 99}]},
    )
    expected = csv.copy()
    expected["sex"] = expected["sex"].replace({"Female": str(int(female))})
    expected["education"] = expected["education"].mask(expected["education"] == "Preschool")
    expected["age"] = expected["age"].astype(float).mask(expected["age"] >= 90)
    assert (expected["age"].isna().sum(), expected["education"].isna().sum()) == (
        int((csv["age"] >= 90).sum()),
        int((csv["education"] == "Preschool").sum()),
    )
    frame, info = read_table_with_info(changed)
    pd.testing.assert_frame_equal(frame, expected)
    assert any(f"values: 'sex' ({int((csv['sex'] == 'Female').sum()):,})" in note for note in info.notes)
    assert (
        diagnose(changed, qis, sensitive=sensitive).to_dict() == diagnose(expected, qis, sensitive=sensitive).to_dict()
    )


# ----------------------------------------------------------------------------------------------------------- limits


def test_limits_are_checked_on_the_metadata_before_the_data_is_read(tmp_path: Path) -> None:
    path = written(tmp_path, "survey.sav", SURVEY)
    cases = [
        (ReadLimits(max_columns=3), "max_columns", 4, "survey.sav has 4 columns, over the limit of 3 columns."),
        (ReadLimits(max_rows=5), "max_rows", 7, "survey.sav has 7 rows, over the limit of 5 rows."),
        (ReadLimits(max_cells=20), "max_cells", 28, "survey.sav has 28 cells, over the limit of 20 cells."),
    ]
    for limits, limit, found, message in cases:
        with pytest.raises(ReadLimitError) as caught:
            read_table(path, limits=limits)
        assert (caught.value.limit, caught.value.found, str(caught.value)) == (limit, found, message)


def test_without_a_declared_row_count_no_more_rows_than_the_limits_allow_are_read(tmp_path: Path) -> None:
    """An SPSS file may leave its case count unknown (-1): the rows are then counted as read, and reading stops one
    row over the limit; a compressed file stops when its rows expand past the decompression limit."""
    unknown = set_ncases(written(tmp_path, "survey.sav", SURVEY), -1)
    assert read_table(unknown, filename="unknown.sav").shape == (7, 4)
    with pytest.raises(ReadLimitError, match=r"unknown\.sav has more than 5 rows, over the limit of 5 rows\."):
        read_table(unknown, filename="unknown.sav", limits=ReadLimits(max_rows=5))
    constant = pd.DataFrame({"a": np.ones(20_000), "b": np.zeros(20_000)})  # 320,000 bytes in rows of 16
    compressed = set_ncases(written(tmp_path, "constant.zsav", constant), -1)
    assert len(compressed) < 20_000
    limits = ReadLimits(max_decompressed_bytes=100_000)
    with pytest.raises(ReadLimitError) as caught:
        read_table(compressed, filename="constant.zsav", limits=limits)
    rows_read = 100_000 // 16 + 1
    assert caught.value.limit == "max_decompressed_bytes" and caught.value.found == rows_read * 16
    assert str(caught.value).startswith(f"constant.zsav expands to {rows_read * 16:,} bytes when decompressed")
    # A header declaring more rows than an uncompressed file can hold is damaged: refused before reading.
    with pytest.raises(DataReadError, match=r"declares 50,000,000 rows, more than its [\d,]+ bytes can hold"):
        read_table(set_ncases(tmp_path / "survey.sav", 50_000_000), filename="lies.sav")


def test_the_time_limit_stops_the_parser(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    big = pd.DataFrame({f"c{i}": rng.integers(0, 100, 200_000).astype(float) for i in range(8)})
    path = written(tmp_path, "big.sav", big)
    started = time.perf_counter()
    with pytest.raises(
        ReadLimitError, match=r"Reading big\.sav took more than 0\.1 seconds, the limit; it was stopped"
    ):
        read_table(path, limits=ReadLimits(max_seconds=0.1))
    stopped = time.perf_counter() - started
    started = time.perf_counter()
    assert read_table(path).shape == (200_000, 8)
    assert stopped < time.perf_counter() - started


# ------------------------------------------------------------------------------------------------------- encodings


def test_encodings(tmp_path: Path) -> None:
    """Text that is not valid in the declared encoding is read as Windows-1252 with a note; an encoding given is
    used, and one in which the text is not valid, or that does not exist, is an error."""
    raw = written(tmp_path, "towns.sav", pd.DataFrame({"town": ["Zxrich", "Genxve"], "n": [1.0, 2.0]})).read_bytes()
    latin1 = raw.replace(b"Zxrich", "Zürich".encode("latin-1")).replace(b"Genxve", "Genève".encode("latin-1"))
    frame, info = read_table_with_info(latin1, filename="towns.sav")
    assert frame["town"].tolist() == ["Zürich", "Genève"] and info.encoding == "WINDOWS-1252"
    assert info.notes == (
        "towns.sav: its text is not valid UTF-8, the encoding it declares; it was read as Windows-1252. If names or "
        "labels look wrong, give the encoding it was written in (encoding=...).",
    )
    frame, info = read_table_with_info(latin1, filename="towns.sav", encoding="ISO-8859-1")
    assert frame["town"].tolist() == ["Zürich", "Genève"] and info.notes == () and info.encoding == "ISO-8859-1"
    with pytest.raises(DataReadError, match=r"towns\.sav: its text is not valid UTF-8, the encoding given"):
        read_table(latin1, filename="towns.sav", encoding="UTF-8")
    with pytest.raises(ParameterError, match=r"encoding='klingon' is not a character encoding the reader knows"):
        read_table(latin1, filename="towns.sav", encoding="klingon")
    undefined = raw.replace(b"Zxrich", b"Z\x81rich")  # 0x81 has no character in Windows-1252 either
    with pytest.raises(DataReadError, match=r"valid neither in UTF-8, the encoding it declares, nor in Windows-1252"):
        read_table(undefined, filename="towns.sav")
    with pytest.raises(DataReadError, match=r"towns\.csv is not an SPSS, Stata or SAS file, so encoding='latin-1'"):
        read_table(b"a,b\n1,2\n", filename="towns.csv", encoding="latin-1")


# -------------------------------------------------------------------------------------------------- damaged files


def test_damaged_files_are_refused_with_a_specific_message(tmp_path: Path) -> None:
    sav = written(tmp_path, "survey.sav", SURVEY, variable_value_labels=SURVEY_LABELS).read_bytes()
    for cut in (10, 100, 300, len(sav) // 2, len(sav) - 9):
        with pytest.raises(DataReadError, match=r"^cut\.sav could not be read as an SPSS data file: it is truncated"):
            read_table(sav[:cut], filename="cut.sav")
    # The first variable's type made a 32,512-byte string: the C parser crashes (in its own process) or refuses it.
    crash = bytearray(sav)
    crash[181] = 0x7F
    with pytest.raises(DataReadError, match=r"^crash\.sav could not be read as an SPSS data file: .*damaged"):
        read_table(bytes(crash), filename="crash.sav")
    assert read_table(sav, filename="after.sav").shape == (7, 4)  # the next read has a parser again
    dta = written(tmp_path, "survey.dta", SURVEY).read_bytes()
    with pytest.raises(DataReadError, match=r"^cut\.dta could not be read as a Stata data file: it is truncated"):
        read_table(dta[: len(dta) // 2], filename="cut.dta")
    with pytest.raises(DataReadError, match=r"^text\.dta is not a Stata data file \(it does not start with a Stata "):
        read_table(b"a,b\n1,2\n", filename="text.dta")
    with pytest.raises(DataReadError, match=r"^empty\.sas7bdat is empty\.$"):
        read_table(b"", filename="empty.sas7bdat")
    with pytest.raises(DataReadError, match=r"^noise\.sas7bdat is not a SAS data set \(\.sas7bdat\) \(it does not"):
        read_table(bytes(range(256)) * 4, filename="noise.sas7bdat")
    with pytest.raises(DataReadError, match=r"is a SAS CPORT file \(written by PROC CPORT\), which cannot be read"):
        read_table(b"**COMPRESSED** **COMPRESSED** **COMPRESSED**" + bytes(200), filename="data.xpt")
