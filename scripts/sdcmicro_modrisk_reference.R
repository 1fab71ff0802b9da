# Reference values of sdcMicro's model-based risk (modRisk) for the privdash tests.
#
# Runs sdcMicro's own modRisk() code, R/modRisk.R at commit cf3251017482bb215f0a9abf4a930f502399fb72 of
# https://github.com/sdcTools/sdcMicro (GPL-2), read from a local git mirror of that repository and sourced
# unchanged; sdcMicro itself need not be installed (only data.table and MASS). It prints the values that
# tests/unit/core/measure/test_model_risk.py holds as constants:
#
#   1. the 10-row sample_Data of sdcMicro's tests/testthat/test_modRisks.R (set.seed(123); runif), without and
#      with missing key values, and gr1/gr2 of the five methods, bound Inf and 1.5; and with every weight 1;
#   2. testdata.csv (sdcMicro's testdata) with keys urbrur, roof, walls, water, electcon, relat, sex and weights
#      sampling_weight (all 100), every method, bound Inf and 2, and a model with the interaction water:electcon;
#      the same keys with the varying weights household_weights (bound 5).
#
# The keys are made factors first, as sdcMicro's createSdcObj() does for key variables.
#
# Usage: Rscript scripts/sdcmicro_modrisk_reference.R [TESTDATA_CSV] [SDCMICRO_GIT_DIR]

suppressMessages({
  library(data.table)
  library(MASS)
})

args <- commandArgs(trailingOnly = TRUE)
testdata_csv <- if (length(args) >= 1) args[1] else "/work/shared/data/sdcmicro_testdata/testdata.csv"
mirror <- if (length(args) >= 2) args[2] else "/work/.mirror/sdcTools+sdcMicro/repo"
commit <- "cf3251017482bb215f0a9abf4a930f502399fb72"

# modRisk.R declares a method for the sdcMicroObj class; a stand-in class lets the file be sourced as it is.
setClass("sdcMicroObj", representation("VIRTUAL"))
source_file <- tempfile(fileext = ".R")
status <- system2("git", c("-C", mirror, "show", paste0(commit, ":R/modRisk.R")), stdout = source_file)
if (status != 0) stop("cannot read R/modRisk.R from ", mirror)
source(source_file)

fmt <- function(x) formatC(x, digits = 17, format = "g")

run <- function(label, data, method, formula, bound = Inf) {
  fr <- suppressWarnings(modRisk(data, method = method, formulaM = formula, weights = "weights", bound = bound))
  cat(sprintf("%s method=%s bound=%s gr1=%s gr2=%s\n", label, method, format(bound), fmt(fr$gr1), fmt(fr$gr2)))
  invisible(fr)
}

methods <- c("default", "CE", "PML", "weightedLLM", "IPF")

# 1. sdcMicro's sample_Data (tests/testthat/test_modRisks.R).
set.seed(123)
sample_Data <- round(runif(10, 1, 3), digits = 0)
sample_Data <- cbind(sample_Data, round(runif(10, 1, 2), digits = 0))
sample_Data <- cbind(sample_Data, round(runif(10, 1, 5), digits = 0))
sample_Data <- cbind(sample_Data, round(runif(10, 100, 100), digits = 0))
sample_Data <- as.data.frame(sample_Data)
colnames(sample_Data) <- c("Var1", "Var2", "Var3", "weights")
cat("sample_Data:\n")
print(sample_Data)
sample_Data[, 1] <- factor(sample_Data[, 1], levels = 1:3, labels = LETTERS[1:3])
sample_Data[, 2] <- factor(sample_Data[, 2])
sample_Data[, 3] <- factor(sample_Data[, 3])
sample_Data[, 4] <- as.numeric(sample_Data[, 4])
form <- ~ Var1 + Var2 + Var3
for (bound in c(Inf, 1.5)) for (m in methods) run("sample", sample_Data, m, form, bound)

fr <- run("sample", sample_Data, "default", form)
cat("sample default fitted (grid sorted by Var1, Var2, Var3):", fmt(as.numeric(fr$fitted)), "\n")
cat("sample default inclProb:", fmt(fr$inclProb), "\n")
fr <- run("sample", sample_Data, "weightedLLM", form)
cat("sample weightedLLM fitted:", fmt(as.numeric(fr$fitted)), "\n")
fr <- run("sample", sample_Data, "CE", form)
cat("sample CE fitted:", fmt(as.numeric(fr$fitted)), "\n")

# Every weight 1 (sdcMicro's weights for an sdcMicroObj without a weight variable): gr2 is 0/0.
unit <- sample_Data
unit$weights <- 1
for (m in methods) run("sample-unit-weights", unit, m, form)

# The same with missing key values (the sdcMicroObj variant of the tests: no missing weight).
set.seed(123)
sample_Data <- round(runif(10, 1, 3), digits = 0)
sample_Data[c(2, 7, 9)] <- NA
sample_Data <- cbind(sample_Data, round(runif(10, 1, 2), digits = 0))
sample_Data[c(3, 5, 10), 2] <- NA
sample_Data <- cbind(sample_Data, round(runif(10, 1, 5), digits = 0))
sample_Data[c(2, 8), 3] <- NA
sample_Data <- cbind(sample_Data, round(runif(10, 100, 100), digits = 0))
sample_Data <- as.data.frame(sample_Data)
colnames(sample_Data) <- c("Var1", "Var2", "Var3", "weights")
cat("sample_Data with missing keys:\n")
print(sample_Data)
sample_Data[, 1] <- factor(sample_Data[, 1], levels = 1:3, labels = LETTERS[1:3])
sample_Data[, 2] <- as.factor(sample_Data[, 2])
sample_Data[, 3] <- as.factor(sample_Data[, 3])
sample_Data[, 4] <- as.numeric(sample_Data[, 4])
for (bound in c(Inf, 1.5)) for (m in methods) run("missing", sample_Data, m, form, bound)

# 2. testdata.csv, seven keys as factors.
keys <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
testdata <- read.csv(testdata_csv)
x <- testdata[, c(keys, "sampling_weight")]
colnames(x) <- c(keys, "weights")
for (k in keys) x[[k]] <- as.factor(x[[k]])
form <- as.formula(paste("~", paste(keys, collapse = " + ")))
for (bound in c(Inf, 2)) for (m in methods) run("testdata", x, m, form, bound)
form_interaction <- as.formula(paste("~", paste(keys, collapse = " + "), "+ water:electcon"))
for (m in methods[1:4]) run("testdata+water:electcon", x, m, form_interaction)

# testdata's sampling weights are all 100; household_weights (100 / household size) vary within cells. With them
# some large cells have inclusion sums p far above 1, exp(-(1 - p) lambda) overflows to Inf there, and sdcMicro's
# sum(as.numeric(freq == 1) * risk) is NaN (0 * Inf) with bound Inf: bound 5 keeps those cells out.
xh <- x
xh$weights <- testdata$household_weights
run("testdata-household-weights", xh, "default", form)
for (m in methods) run("testdata-household-weights", xh, m, form, bound = 5)
run("testdata-household-weights+water:electcon", xh, "PML", form_interaction, bound = 5)

# Per-cell values of one model on testdata: fitted lambda and risk1 of a few sample-unique cells.
fr <- run("testdata", x, "default", form)
y <- data.table(x)[, .(counts = .N, weights = sum(weights), inclProb = sum(1 / weights)), by = keys]
cat("testdata cells:", nrow(y), " sample-unique cells:", sum(y$counts == 1), "\n")
