/** Every build stage, in the order a build runs them. */
import type { Stage, StageName } from '../stage.ts';
import { elevationStage } from './elevation.ts';
import { imageryStage } from './imagery.ts';
import { renderStage } from './render.ts';
import { vectorStage } from './vector.ts';

export const STAGES: readonly Stage[] = [vectorStage, imageryStage, elevationStage, renderStage];

/** The stage called `name`. */
export function stageNamed(name: StageName): Stage {
  return STAGES.find((s) => s.name === name)!;
}
