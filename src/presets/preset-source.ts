/**
 * Why a preset exists for a patient: registered through the API, or (later) derived from the
 * patient's problem list. Rules from the configuration are not stored, so they have no source here.
 */
export const PRESET_SOURCES = ['registered', 'problem_list'] as const;
export type PresetSource = (typeof PRESET_SOURCES)[number];
