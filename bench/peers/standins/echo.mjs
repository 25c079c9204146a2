import { standIn } from './standin.mjs';

standIn('echo');
