# Reference values of sdcMicro's global risk (ER / n) for the release-target tests.
#
# indivRisk() below is copied from sdcMicro R/indivRisk.R (method "approx"), commit
# cf3251017482bb215f0a9abf4a930f502399fb72 (GPL-2); fk / Fk are computed as sdcMicro's freqCalc() does without
# missing keys (fk: records sharing the key, Fk: sum of their sampling weights), with data.table.
# measure_risk()'s global_risk is sum(rk) / n (R/measure_risk.R).
#
# Usage: Rscript scripts/release_targets_reference.R /work/shared/data/sdcmicro_testdata/testdata.csv
suppressMessages(library(data.table))

indivRisk_approx <- function(fk, Fk) {
  N <- length(fk)
  pk <- fk / Fk
  rk <- rep(0, N)
  for (k in 1:N) {
    if (fk[k] > 2) {
      rk[k] <- pk[k] / (fk[k] - (1 - pk[k]))
    }
    if (fk[k] == 2) {
      rk[k] <- (pk[k] / (1 - pk[k])) - (((pk[k] / (1 - pk[k]))^2) * log(1 / pk[k]))
    }
    if (fk[k] == 1) {
      rk[k] <- (pk[k] / (1 - pk[k])) * log(1 / pk[k])
    }
  }
  TF <- fk == Fk
  if (any(TF)) {
    rk[TF] <- 1 / fk[TF]
  }
  rk
}

global_risk <- function(data, keys, weight) {
  dt <- as.data.table(data)
  dt[, fk := .N, by = keys]
  dt[, Fk := sum(get(weight)), by = keys]
  rk <- indivRisk_approx(dt$fk, dt$Fk)
  sum(rk) / nrow(dt)
}

args <- commandArgs(trailingOnly = TRUE)
testdata <- fread(args[1])
keys <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
cat(sprintf("testdata 7 keys, sampling_weight: global_risk = %.12f\n", global_risk(testdata, keys, "sampling_weight")))
cat(sprintf("testdata 7 keys, household_weights: global_risk = %.12f\n", global_risk(testdata, keys, "household_weights")))
toy <- data.table(a = c("x", "y", "y", "z", "z", "z"), w = c(4, 2, 2, 3, 3, 3))
cat(sprintf("toy table, w: global_risk = %.12f\n", global_risk(toy, "a", "w")))
