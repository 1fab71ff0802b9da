"""Reading tables from CSV, Excel, Parquet, SPSS, Stata and SAS files, with clear errors for files that are not
tables.

Rules (applied the same way by the CLI, the Python API and the dashboard):

* **Format** from the content when it has a signature (``PAR1`` is Parquet, a ZIP archive holding a workbook is
  Excel; SPSS, Stata and SAS files have theirs), else from the file name's extension (``.csv``, ``.tsv``, ``.txt``,
  ``.xlsx``, ``.xlsm``, ``.parquet``, ``.pq``, ``.sav``, ``.zsav``, ``.dta``, ``.sas7bdat``, ``.xpt``); anything else
  is delimited text. A ``.csv`` that is really a workbook is read as one (with a note in
  :class:`TableInfo`); a ``.xlsx`` or ``.parquet`` whose content is not one is refused with a message saying what
  it looks like. Old ``.xls`` (and password-protected) workbooks, gzip files and other ZIP archives are refused.
* **Encoding** of delimited text: a UTF-16 or UTF-32 byte-order mark, else UTF-8 (a byte-order mark is dropped),
  else the most probable encoding found by ``charset-normalizer`` on the first 1 MB, reported in
  :class:`TableInfo`. A NUL byte anywhere in the file (or a NUL character in UTF-16/32 text), or control
  characters in more than 1% of the first 64 KB, mean binary content: the file is refused.
* **Delimiter**: the one of ``, ; \\t |`` that splits the first lines into the same, largest number of fields.
  The header gives the number of columns: a row with more fields is an error naming the line (never a silent
  shift into an index), a row with fewer fields has missing values at its end.
* **Parsing**: fields are separated by the delimiter, ``"`` quotes a field (``""`` inside it is a quote), spaces
  before a field are skipped (a quote after them opens a quoted field), blank lines are skipped, and lines end with
  LF, CRLF or CR. UTF-8 text is parsed by Arrow's multi-threaded CSV reader into Arrow strings and each column is
  settled through its distinct values (an order of magnitude faster than cell by cell, and text columns stay in
  Arrow memory); the numeric rules below are checked on all columns together, in bulk (Arrow's kernels and numpy
  over the texts' bytes, no Python per value); other encodings, and the shapes Arrow's tokenizer reads otherwise
  than pandas' (spaces before an opening quote, rows of another width, an unclosed quote), are parsed by pandas' C
  parser. Both give the same frame, the same notes and the same errors: a differential test holds them equal on
  thousands of random files.
* **Spaces around a value are removed**, before and after it, inside quotes too: ``Bath``, ``Bath  ``, `` Bath``
  and ``" Bath "`` are one town (in an Excel text cell too). Such spaces never tell two people apart and an
  attacker matching records ignores them (the measured attacks do too), so keeping them would split a class in two
  and overstate the risk. Only the space character is removed (not tabs or non-breaking spaces); a value that is
  then empty or a missing-value marker is missing. Every engine that reads the file as text applies the same rule.
* **Column names** are stripped of surrounding spaces; a name that is empty becomes ``Unnamed: i`` (``i`` the
  0-based position) and a name used twice gets a suffix (``a``, ``a.1``); both are reported in
  :attr:`TableInfo.notes`.
* **Values** of delimited text are read as text. Empty cells and the usual markers (``NA``, ``N/A``, ``NaN``,
  ``null``, ``None``... the pandas default list) are missing values. A column becomes numeric only when every
  non-missing value is a decimal number (``[+-]digits[.digits][e[+-]digits]``), no value has a leading zero
  (``"02134"`` stays text, so ZIP codes and ids keep their form), **and the conversion keeps every value**:

  - integers become ``int64`` when all of them fit in 64 bits (and, for a column with missing values, which
    is stored as float64, when none has more than 15 digits); otherwise the column stays text, so that
    ``123456789012345678901234567890`` and its neighbours stay distinct and exact;
  - other numbers become float64 when the float **keeps** every value. A decimal text ``t`` whose last
    significant digit is in the place of ``10**q`` (``q = -1`` for ``1.50`` and ``-84.482753289932688e2``'s
    ``q = -13``; trailing zeros do not count) is read as the float ``f`` nearest to it (as Python's ``float``), and
    ``f`` keeps ``t`` when ``t`` is, among the multiples of ``10**q`` that read back as ``f``, the one nearest to
    ``f`` (ties to the even one). In words: rounding the float to the text's last digit gives the text back, so a
    float is a float however many digits it was written with (``repr``'s shortest form, ``%.17g``, numpy's
    ``%.18e``, ``0.30000000000000004``), and a text that says more than its float (``0.1234567890123456789``,
    ``9007199254740993.0``), ``1e999`` (overflow) and ``1e-400`` (underflow to 0) are not kept. Every zero is kept
    (``-0.0`` too). A decimal of at most 15 significant digits in the range of normal floats is always kept
    (DBL_DIG); longer ones are checked in bulk (see :func:`_kept_floats`). A column with a value not kept stays
    text, and so does a column where two kept values are different numbers that become one float
    (``0.1`` and ``0.10000000000000001``), so that distinct texts never merge into one number. Texts such as
    ``inf`` or ``Infinity`` are not numbers here; a number is read with the spaces and other characters
    ``str.strip()`` removes around it, and a leading ``+``;
  - a float column whose values are all whole and in the 64-bit range, with no missing value, is ``int64``.

  Each column kept as text for one of these reasons is named in :attr:`TableInfo.notes`.
* **Excel**: the first sheet unless ``sheet`` names or numbers another; :attr:`TableInfo.sheets` lists them all
  and, when there are several and none was chosen, a note says which was read. Cells keep their types (a text
  cell ``02134`` stays text; text cells that look like numbers are converted as above), error cells
  (``#DIV/0!``...) and the missing-value markers are missing values, empty rows are skipped. Without a choice,
  the first *visible* sheet is read (hidden sheets are named in a note). A merged range holds its value in its
  first cell, the others are missing: a note names the ranges. A sheet whose rows are numbered twice or out of
  order (``<row r="2">`` twice, which openpyxl merges into one row) is refused with the row's number. A workbook whose
  formulas have no saved result (written by a program that does not calculate, e.g. openpyxl, which a
  spreadsheet program would recalculate on opening) is refused with a message naming the columns, instead of
  being read as missing values or placeholder zeros.
* **Parquet**: read as typed (:func:`arrow_frame`). Nested columns (list, struct, map) and duplicate column names
  are refused with a message naming them. A pandas index saved with a name (``df.set_index('region')``) is a
  column; decimals follow the numeric rules of text on their exact digits (float64 when exact, else text); bytes
  are text (UTF-8, else hexadecimal). Arrow IPC (Feather) files are refused with a message.
* **SPSS, Stata, SAS** (``.sav``, ``.zsav``, ``.dta``, ``.sas7bdat``, ``.xpt``; recognised by their signatures, read
  with pyreadstat): read as typed, the way statistical offices' users read them (sdcMicro, haven's ``as_factor``):

  - a variable with **value labels** holds its labels in place of its codes (``1`` -> ``"Male"``), as text; a code
    without a label is kept as it is (as text: ``3``). A note names the labelled columns, and says when two codes
    became one value (two codes with one label). A variable whose present values have no label stays numeric;
  - **missing values** the file declares are missing: system missing (``.``), SPSS user-defined missing values
    and ranges, Stata's ``.a`` to ``.z``, SAS's ``.A`` to ``.Z`` and ``._``, and empty texts (Stata's rule for
    strings); a note counts them by kind and column;
  - numbers are float64, or int64 when every value is whole and none is missing (the rule for delimited text);
    texts stay text (no conversion to numbers: the file has typed them); dates and date-times are datetime64, times
    of day are ``datetime.time`` values (as Excel cells are read);
  - **encoding**: the one the file declares (Stata before version 14: Windows-1252). Text that is not valid in it
    is read as Windows-1252 with a note; ``encoding`` names another (an iconv name, e.g. ``ISO-8859-15``).

  pyreadstat parses in a child process (a damaged file can crash its C parser; the crash ends that process only
  and becomes a :class:`~privdash.errors.DataReadError`), which ``max_seconds`` stops when its time is up.
* Input files are only ever opened for reading.

Reading limits (:class:`ReadLimits`) are checked **before or while** parsing, never after a full parse: the
number of columns from the CSV header, the Parquet metadata, the worksheet rows or the variables of a statistical
file; the number of rows and cells while the rows are read (CSV: at most ``max_rows + 1`` rows are parsed; Excel:
rows are streamed and counted; SPSS, Stata, SAS: from the file's metadata, and no more rows than the limits allow
are parsed); the declared uncompressed sizes of a workbook's ZIP entries and of a Parquet file's row groups, and
the rows times the row width of a compressed statistical file, before anything is decompressed, and what shared
strings and Parquet dictionaries decode to, before they are decoded; the reading time
between chunks (see :class:`ReadLimits`). Going over one raises :class:`~privdash.errors.ReadLimitError`,
whose message names the limit, the value found and, when the caller says which setting controls it, that setting.
An Excel sheet holding more rows (1,048,576) or columns (16,384) than Excel allows is refused in any case: it is
damaged or built to exhaust memory.

Writing (:func:`write_table`, :func:`csv_text`) makes exports safe to open in a spreadsheet: a text cell (or a
column name) that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading
``'`` (OWASP's rule against CSV / formula injection), so Excel or LibreOffice shows it as text instead of running
it as a formula (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``). Numbers are never changed: a numeric column's ``-5``
stays a number. Machine consumers that need the raw text pass ``escape_formulas=False`` (CLI:
``--no-escape-formulas``). Parquet is a typed format that spreadsheets do not evaluate, so it is written as it is.

The reader is split by format: :mod:`~privdash.data.tables.read` (the entry points, the format, the shape checks),
:mod:`~privdash.data.tables.delimited`, :mod:`~privdash.data.tables.numbers` (typing text columns),
:mod:`~privdash.data.tables.excel`, :mod:`~privdash.data.tables.parquet`, :mod:`~privdash.data.tables.statistical`
(with :mod:`~privdash.data.tables.readstat`, the worker processes), :mod:`~privdash.data.tables.limits` and
:mod:`~privdash.data.tables.write`. This package gives their public names.
"""

from privdash.data.tables.delimited import header_names, header_record, sniff_delimited
from privdash.data.tables.limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_READ_LIMITS,
    EXCEL_MAX_COLUMNS,
    EXCEL_MAX_ROWS,
    ReadLimits,
)
from privdash.data.tables.numbers import infer_numeric_columns
from privdash.data.tables.parquet import PANDAS_INDEX, arrow_frame
from privdash.data.tables.read import TableInfo, detect_format, read_table, read_table_with_info
from privdash.data.tables.write import FORMULA_PREFIXES, csv_text, escape_formulas, write_table

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_READ_LIMITS",
    "EXCEL_MAX_COLUMNS",
    "EXCEL_MAX_ROWS",
    "FORMULA_PREFIXES",
    "PANDAS_INDEX",
    "ReadLimits",
    "TableInfo",
    "arrow_frame",
    "csv_text",
    "detect_format",
    "escape_formulas",
    "header_names",
    "header_record",
    "infer_numeric_columns",
    "read_table",
    "read_table_with_info",
    "sniff_delimited",
    "write_table",
]
