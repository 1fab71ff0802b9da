# Reference values of the household (hierarchical) risk, computed with sdcMicro's own R code.
#
# sdcMicro is not installed here, so this script copies the functions it needs from sdcMicro's source
# (https://github.com/sdcTools/sdcMicro, GPL-2, commit cf3251017482bb215f0a9abf4a930f502399fb72):
#   * indivRisk()                    R/indivRisk.R (the whole function, unchanged);
#   * the household part of measure_riskWORK() (R/measure_risk.R, `if (!is.null(hid))` with fast_hier = TRUE, the
#     default), unchanged but for the function wrapper;
#   * freqCalc()'s fk and Fk (R/freqCalc.R) are computed with data.table: for data without missing key values,
#     freqCalc returns, for each record, the number of records with its key (fk) and the sum of their weights (Fk),
#     which is what the `by` below computes.
#
# Usage: Rscript scripts/sdcmicro_household_reference.R /work/shared/data/sdcmicro_testdata/testdata.csv
# The printed numbers are the constants of tests/unit/core/measure/test_household.py.

suppressPackageStartupMessages(library(data.table))

# ---- R/indivRisk.R (sdcMicro cf32510), unchanged ------------------------------------------------------------------
indivRisk <- function(x, method = "approx", qual = 1, survey = TRUE) {
  ## x ... object from freqCalc
  if (length(colnames(x$freqCalc)) > 0) {
    if (all(is.numeric(x$keyVars))) {
      knames <- colnames(x$freqCalc)[x$keyVars]
    } else if (all(is.character(x$keyVars))) {
      knames <- x$keyVars
    } else {
      stop("in 'indivRisk' all keyVars must be defined in the same way:\n as column index or as column name.")
    }
  } else {
    knames <- NULL
  }
  if (survey == TRUE) {
    P <- ncol(x$freqCalc)
    N <- dim(x$freqCalc)[1]
    fk <- x$fk
    Fk <- x$Fk
    pk <- fk/Fk
    # pk = pk-0.0001
    rk <- rep(0, N)
    if (method == "approx") {
      rk <- rep(0, N)
      for (k in 1:N) {
        if (fk[k] > 2) {
          rk[k] <- pk[k]/(fk[k] - (1 - pk[k]))
        }
        if (fk[k] == 2) {
          rk[k] <- (pk[k]/(1 - pk[k])) - (((pk[k]/(1 - pk[k]))^2) * log(1/pk[k]))
        }
        if (fk[k] == 1) {
          rk[k] <- (pk[k]/(1 - pk[k])) * log(1/pk[k])
        }
      }
    }
    TF <- fk == Fk
    if (any(TF)) {
      rk[TF] <- 1/fk[TF]
    }
    rk <- rk * qual
    rk <- list(rk = rk, method = method, qual = qual, fk = x$fk, knames = knames)
  }
  if (survey == FALSE) {
    rk <- list(rk = 1/x$fk, method = NA, qual = NA, fk = x$fk, knames = knames)
  }
  class(rk) <- "indivRisk"
  invisible(rk)
}
# (the method = "exact" branch of indivRisk is left out: measure_risk calls the default "approx")

# ---- freqCalc's fk and Fk (no missing key values) ------------------------------------------------------------------
freqCalcComplete <- function(data, keyVars, w = NULL) {
  dt <- as.data.table(data[, keyVars, drop = FALSE])
  dt[, .row := .I]
  dt[, .w := if (is.null(w)) 1 else data[[w]]]
  dt[, `:=`(fk = .N, Fk = sum(.w)), by = keyVars]
  setorder(dt, .row)
  if (anyNA(data[, keyVars])) stop("this copy of freqCalc handles data without missing keys only")
  list(freqCalc = data, keyVars = keyVars, w = w, fk = dt$fk, Fk = dt$Fk)
}

# ---- measure_riskWORK (sdcMicro cf32510, R/measure_risk.R), the parts that give the values printed -----------------
measure_riskHH <- function(data, keyVars, w = NULL, hid = NULL, fast_hier = TRUE) {
  f <- freqCalcComplete(data, keyVars = keyVars, w = w)
  ir <- indivRisk(f, survey = !is.null(w))
  Res <- matrix(NA, ncol = 3, nrow = nrow(data))
  Res[, 1] <- ir$rk
  Res[, 2] <- ir$fk
  Res[, 3] <- f$Fk
  res <- list()
  res$Res <- Res
  colnames(res$Res) <- c("risk", "fk", "Fk")
  res$global_risk_ER <- sum(ir$rk, na.rm = TRUE)
  res$global_risk <- res$global_risk_ER/nrow(res$Res)
  res$global_risk_pct <- res$global_risk * 100
  if (!is.null(hid)) {
    ind <- order(data[, hid])
    dataX <- cbind(data[, hid], res$Res[, 1])[ind, ]
    ind <- order(c(1:nrow(dataX))[ind])
    for (i in 1:ncol(dataX)) {
      if (!is.numeric(dataX[, i]))
        dataX[, i] <- as.numeric(dataX[, i])
    }
    dataX <- as.matrix(dataX)
    maxHH <- max(table(dataX[, 1]), na.rm = TRUE)
    if (fast_hier) {
      reshier <- by(dataX[, 2], dataX[, 1], function(x) 1 - prod(1 - x), simplify = TRUE)
      reshier <- data.frame(cbind(reshier, unique(dataX[, 1])))
      colnames(reshier) = c("reshier", "hhid")
      dataX <- data.frame(dataX[, 1])
      colnames(dataX) = c("hhid")
      datX <- merge(dataX, reshier, all.x = TRUE)

      res$Res <- cbind(res$Res, datX$reshier[ind])
      res[["hier_risk_ER"]] <- sum(res$Res[, 4], na.rm = TRUE)
      res[["hier_risk"]] <- sum(res$Res[, 4], na.rm = TRUE)/nrow(res$Res)
      res[["hier_risk_pct"]] <- res[["hier_risk"]] * 100
    }
    colnames(res$Res) <- c("risk", "fk", "Fk", "hier_risk")
  }
  invisible(res)
}

# ---- the values -------------------------------------------------------------------------------------------------
args <- commandArgs(trailingOnly = TRUE)
path <- if (length(args)) args[1] else "/work/shared/data/sdcmicro_testdata/testdata.csv"
testdata <- read.csv(path)
rows <- c(1, 2, 3, 100, 1000, 4580)  # 1-based record numbers whose hier_risk is printed
show <- function(label, res) {
  cat(sprintf("%s\n", label))
  cat(sprintf("  global_risk_ER = %.17g\n  global_risk = %.17g\n", res$global_risk_ER, res$global_risk))
  cat(sprintf("  hier_risk_ER = %.17g\n  hier_risk = %.17g\n", res$hier_risk_ER, res$hier_risk))
  cat(sprintf("  highest hier_risk = %.17g\n", max(res$Res[, "hier_risk"])))
  cat(sprintf("  households = %d\n", length(unique(testdata$ori_hid))))
  for (r in rows) cat(sprintf("  hier_risk[%d] = %.17g\n", r, res$Res[r, "hier_risk"]))
}
seven <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
five <- c("urbrur", "roof", "walls", "water", "sex")
show("seven keys, w = sampling_weight, hid = ori_hid",
     measure_riskHH(testdata, seven, w = "sampling_weight", hid = "ori_hid"))
show("seven keys, no weights, hid = ori_hid", measure_riskHH(testdata, seven, hid = "ori_hid"))
show("five keys (the measure_risk example), w = sampling_weight, hid = ori_hid",
     measure_riskHH(testdata, five, w = "sampling_weight", hid = "ori_hid"))
