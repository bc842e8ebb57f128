import { describe, expect, it } from "vitest";
import { AtriumError } from "../errors/atrium-error.ts";
import { DECLARED_AGE_PREF, isPreferenceType, PERSONAL_DETAILS_PREF, preferencesToRead, preferencesToWrite } from "./preferences.ts";

const NOW = Date.UTC(2026, 10, 28, 12);
const APP = { fullAccess: false };
const HOLDER = { fullAccess: true };
const adult = { $type: "app.bsky.actor.defs#adultContentPref", enabled: true };
const born = (birthDate: string) => ({ $type: PERSONAL_DETAILS_PREF, birthDate });
const age = (over13: boolean, over16: boolean, over18: boolean) => ({ $type: DECLARED_AGE_PREF, isOverAge13: over13, isOverAge16: over16, isOverAge18: over18 });

describe("preferences an app reads (issue 28: the birth date is the holder's, the declared age is computed)", () => {
  it("an OAuth app gets the declared age computed from the birth date, never the birth date; the holder gets both", () => {
    const stored = [adult, born("1990-05-01T00:00:00.000Z")];
    expect(preferencesToRead(stored, APP, NOW)).toEqual([adult, age(true, true, true)]);
    expect(preferencesToRead(stored, HOLDER, NOW)).toEqual([adult, born("1990-05-01T00:00:00.000Z"), age(true, true, true)]);
  });

  it("the age turns on the birthday itself (UTC), as of the injected clock", () => {
    const eighteenToday = born("2008-11-28T00:00:00.000Z");
    const eighteenTomorrow = born("2008-11-29T00:00:00.000Z");
    expect(preferencesToRead([eighteenToday], APP, NOW)).toEqual([age(true, true, true)]);
    expect(preferencesToRead([eighteenTomorrow], APP, NOW)).toEqual([age(true, true, false)]);
    expect(preferencesToRead([born("2010-11-29T00:00:00.000Z")], APP, NOW)).toEqual([age(true, false, false)]);
    expect(preferencesToRead([born("2013-11-28T00:00:00.000Z")], APP, NOW)).toEqual([age(true, false, false)]);
    expect(preferencesToRead([born("2013-11-29T00:00:00.000Z")], APP, NOW)).toEqual([age(false, false, false)]);
    expect(preferencesToRead([eighteenTomorrow], APP, Date.UTC(2026, 10, 29))).toEqual([age(true, true, true)]);
  });

  it("a declared age stored before these rules is never given back; without a birth date there is none", () => {
    expect(preferencesToRead([adult, age(true, true, true)], APP, NOW)).toEqual([adult]);
    expect(preferencesToRead([age(true, true, true), born("2015-01-01T00:00:00.000Z")], APP, NOW)).toEqual([age(false, false, false)]);
    expect(preferencesToRead([born("")], HOLDER, NOW)).toEqual([born("")]);
  });

  it("an unreadable birth date declares no age", () => {
    expect(preferencesToRead([born("not a date")], APP, NOW)).toEqual([age(false, false, false)]);
  });
});

describe("preferences an app writes", () => {
  it("an OAuth app that sends a birth date is refused with the reference's InvalidRequest", () => {
    const refusal = (() => {
      try {
        preferencesToWrite([adult, born("1990-01-01T00:00:00.000Z")], APP);
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(AtriumError);
    expect(refusal).toMatchObject({ status: 400, xrpcName: "InvalidRequest", message: `Do not have authorization to set preferences: ${PERSONAL_DETAILS_PREF}` });
  });

  it("an OAuth app's write keeps the stored birth date; a declared age in a write is never stored", () => {
    expect(preferencesToWrite([adult, age(true, true, true)], APP)).toEqual({ written: [adult], keep: [PERSONAL_DETAILS_PREF] });
    expect(preferencesToWrite([adult, born("1990-01-01T00:00:00.000Z"), age(false, false, false)], HOLDER)).toEqual({
      written: [adult, born("1990-01-01T00:00:00.000Z")],
      keep: [],
    });
  });

  it("a preference's $type is an app.bsky NSID, with a definition name after # when one is given", () => {
    for (const type of ["app.bsky.actor.defs#adultContentPref", "app.bsky.actor.defs", "app.bsky.actor.defs#savedFeedsPrefV2"]) expect(isPreferenceType(type), type).toBe(true);
    for (const type of ["com.example.pref", "app.bsky", "app.bsky.", "app.bsky.actor.defs#", "app.bsky.actor.defs#a#b", "app.bsky.actor.defs#1pref", "app.bsky.\u0000actor.defs", "app.bskyx.actor.defs", ""]) {
      expect(isPreferenceType(type), JSON.stringify(type)).toBe(false);
    }
  });
});
